"""Seeded generator of realistic poolsplit stores, pools and contexts (stdlib only)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

import poolsplit

KINDS = ("correction", "task", "fact", "skill", "growth", "episode")
KIND_WEIGHTS = (10, 20, 25, 10, 10, 25)
PROJECTS = ("alpha", "beta", "gamma", "delta", None, None)
TAGS = tuple(f"tag{i}" for i in range(40))
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
_START = NOW - timedelta(days=365)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "qu", "dra")


def vocabulary(size: int = 3000, seed: int = 0) -> list[str]:
    """``size`` distinct pseudo-words of 3 to 12 letters, plus some stopwords."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 5))))
    return sorted(words) + ["the", "and", "with", "for", "to", "a", "of"]


# Store shapes: how base_priority and created are drawn. Real stores often tie:
# many agents never set a priority, and past 90 days every entry sits at the
# recency floor.
SHAPES = ("spread", "uniform", "aged", "few", "flat")
SHAPE_NOTES = {
    "spread": "priority 1-9, created over the past year",
    "uniform": "no priority, no created",
    "aged": "no priority, created 91-365 days old",
    "few": "priority 1-3, created over the past year",
    "flat": "no priority, created, tags or project: one score but the message",
}
_AGED = timedelta(days=91)


def make_store(n: int, seed: int = 1, shape: str = "spread") -> list[dict[str, Any]]:
    """``n`` entries of the six kinds, reproducible from ``seed``.

    ``shape`` (one of SHAPES) changes only the priority and created fields;
    the other fields are drawn the same way, so the shapes differ by ties.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    rng = random.Random(seed)
    vocab = vocabulary(seed=seed)
    store: list[dict[str, Any]] = []
    for i in range(n):
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        entry: dict[str, Any] = {
            "id": f"e{i:07d}",
            "type": kind,
            "content": " ".join(rng.choices(vocab, k=rng.randint(10, 80))),
            "created": (
                _START + timedelta(seconds=rng.randrange(365 * 86400))
            ).isoformat(timespec="seconds"),
            "base_priority": rng.randint(1, 9),
        }
        _reshape(entry, shape, rng)
        if kind == "correction" and rng.random() < 0.3:
            entry["scope"] = "always"
        k = rng.randint(0, 4)
        if k:
            entry["tags"] = rng.sample(TAGS, k)
        entry["project"] = rng.choice(PROJECTS)
        roll = rng.random()
        if roll < 0.05:
            entry["status"] = "archived"
        elif roll < 0.08:
            entry["superseded_by"] = f"e{rng.randrange(n):07d}"
        elif roll < 0.10:
            entry["status"] = "active"
        if rng.random() < 0.3:
            entry["token_count"] = rng.randint(5, 120)
        if shape == "flat":
            entry.pop("tags", None)
            entry["project"] = None
        store.append(entry)
    return store


def _reshape(entry: dict[str, Any], shape: str, rng: random.Random) -> None:
    """Redraw ``entry``'s priority and created for ``shape`` (spread: as is)."""
    if shape == "spread":
        return
    if shape == "few":
        entry["base_priority"] = rng.randint(1, 3)
        return
    del entry["base_priority"]
    if shape in ("uniform", "flat"):
        del entry["created"]
    else:  # aged: every entry at the recency floor
        age = _AGED + timedelta(seconds=rng.randrange(274 * 86400))
        entry["created"] = (NOW - age).isoformat(timespec="seconds")


def make_pools() -> list[poolsplit.Pool]:
    """The five-pool layout of the issue."""
    return [
        poolsplit.Pool(
            "corrections", max_tokens=0, max_entries=0, types=("correction",)
        ),
        poolsplit.Pool("work", max_tokens=800, max_entries=8, types=("task", "fact")),
        poolsplit.Pool(
            "story", max_tokens=600, max_entries=6, types=("episode", "growth")
        ),
        poolsplit.Pool("skills", max_tokens=400, max_entries=3, types=("skill",)),
        poolsplit.Pool("rest", max_tokens=500, max_entries=5, types=None),
    ]


def make_contexts(count: int, seed: int = 2) -> list[dict[str, Any]]:
    """``count`` contexts: a 20-40 word message, 0-3 tags and a project."""
    rng = random.Random(seed)
    vocab = vocabulary(seed=1)
    return [
        {
            "message": " ".join(rng.choices(vocab, k=rng.randint(20, 40))),
            "tags": rng.sample(TAGS, rng.randint(0, 3)),
            "project": rng.choice(PROJECTS),
        }
        for _ in range(count)
    ]
