"""Recipes other memory libraries ship, built from poolsplit's three hooks.

- ``trust_weighted``: scale any scorer by where an entry came from
  (verified > user > external > inferred).
- ``active_at``: an ``is_active`` that also drops expired entries
  (``expires_at``) and entries whose ``sensitivity`` is excluded.
- ``half_life``: exponential recency instead of the default linear decay.
- ``to_messages``: pool results as a chat message list, one header per pool.

    pip install -e .             # in a checkout (or: pip install poolsplit)
    python examples/recipes.py   # nothing else: standard library only
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timezone
from typing import Any

from poolsplit import (
    Pool,
    Scorer,
    default_is_active,
    default_scorer,
    parse_created,
    render,
    retrieve_pools,
)

Entry = Mapping[str, Any]

TRUST_WEIGHTS: dict[str, float] = {
    "verified": 1.5,  # checked against a source or confirmed by a test
    "user": 1.2,  # the user said it
    "external": 0.8,  # read from a web page, an email, a tool result
    "inferred": 0.5,  # the agent concluded it on its own
}


def trust_weighted(
    scorer: Scorer = default_scorer,
    weights: Mapping[str, float] = TRUST_WEIGHTS,
    *,
    missing: str = "inferred",
) -> Scorer:
    """Multiply ``scorer`` by the weight of the entry's ``trust`` level.

    An entry without a ``trust`` key (or with an unknown one) is weighted as
    ``missing``: unlabelled memory gets the least trust, not the most.
    """
    fallback = weights[missing]

    def score(
        entry: Entry, context: Mapping[str, Any] | None, /, *, now: datetime
    ) -> float:
        weight = weights.get(entry.get("trust", missing), fallback)
        return scorer(entry, context, now=now) * weight

    return score


def active_at(
    now: datetime,
    *,
    exclude: Collection[str] = ("secret",),
    base: Callable[[Entry], object] = default_is_active,
) -> Callable[[Entry], bool]:
    """An ``is_active`` for one turn: ``base``, not expired at ``now``, not excluded.

    ``is_active`` takes only the entry, so the turn's time is bound here;
    build one per call with the same ``now`` you pass to ``retrieve_pools``.
    ``expires_at`` is read as ``created`` is (:func:`poolsplit.parse_created`:
    an ISO-8601 str, a datetime, a date or POSIX seconds); one that cannot be
    read keeps the entry: the default predicate decides. ``exclude`` lists
    ``sensitivity`` values never loaded (for example ``("secret", "pii")``
    when the context leaves the machine).
    """
    limit = parse_created(now)
    blocked = frozenset(exclude)

    def is_active(entry: Entry) -> bool:
        if not base(entry) or entry.get("sensitivity") in blocked:
            return False
        expires = parse_created(entry.get("expires_at"))
        return expires is None or limit is None or expires > limit

    return is_active


def half_life(scorer: Scorer = default_scorer, *, days: float = 30.0) -> Scorer:
    """Replace linear recency with ``0.5 ** (age / days)``.

    ``scorer`` sees the entry without ``created`` (so the default applies no
    decay of its own) and its score is multiplied by the half-life factor.
    An entry without a readable ``created`` does not decay.
    """

    def score(
        entry: Entry, context: Mapping[str, Any] | None, /, *, now: datetime
    ) -> float:
        created = parse_created(entry.get("created"))
        if created is None:
            return scorer(entry, context, now=now)
        timeless = {k: v for k, v in entry.items() if k != "created"}
        age_days = max(0.0, (parse_created(now) or created) - created) / 86400.0
        return scorer(timeless, context, now=now) * math.pow(0.5, age_days / days)

    return score


def to_messages(
    results: Mapping[str, list[Any]],
    *,
    headers: Mapping[str, str] | None = None,
    role: str = "system",
) -> list[dict[str, str]]:
    """One chat message per non-empty pool, its text from :func:`poolsplit.render`.

    ``headers`` maps pool names to titles (default: the pool name). Pool order
    is kept, so always-scope corrections in the first pool come first.
    """
    headers = headers or {}
    return [
        {
            "role": role,
            "content": render(
                {name: entries},
                headers={name: headers[name]} if name in headers else None,
            ).rstrip("\n"),
        }
        for name, entries in results.items()
        if entries
    ]


NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
STORE: list[dict[str, Any]] = [
    {
        "id": "c1",
        "type": "correction",
        "scope": "always",
        "trust": "user",
        "content": "Never deploy on Fridays; the user asked twice.",
    },
    {
        "id": "f1",
        "type": "fact",
        "trust": "verified",
        "created": "2026-11-20",
        "content": "The billing API rate limit is 100 requests per minute.",
    },
    {
        "id": "f2",
        "type": "fact",
        "trust": "inferred",
        "created": "2026-11-30",
        "content": "The billing API rate limit is probably 1000 per minute.",
    },
    {
        "id": "f3",
        "type": "fact",
        "trust": "external",
        "created": "2026-06-01",
        "content": "Billing moved to the new cluster in June.",
    },
    {
        "id": "t1",
        "type": "task",
        "trust": "user",
        "created": "2026-11-25",
        "expires_at": "2026-11-28T00:00:00Z",
        "content": "Prepare the billing demo for Thursday 27 November.",
    },
    {
        "id": "t2",
        "type": "task",
        "trust": "user",
        "created": "2026-11-29",
        "content": "Raise the billing alert threshold after the demo.",
    },
    {
        "id": "s1",
        "type": "fact",
        "trust": "user",
        "sensitivity": "secret",
        "content": "The billing admin password is in the team vault, entry 7.",
    },
]
POOLS = [
    Pool("core", 0, 0, types=("correction",)),
    Pool("facts", 60, 1, types=("fact",)),
    Pool("tasks", 60, 2, types=("task",)),
]


def main(argv: list[str] | None = None) -> int:
    context = {"message": "what is the billing rate limit?"}

    def ids(
        scorer: Scorer = default_scorer,
        is_active: Callable[[Entry], object] = default_is_active,
    ) -> dict[str, Any]:
        got = retrieve_pools(
            STORE, POOLS, context, scorer=scorer, is_active=is_active, now=NOW
        )
        return {name: [e["id"] for e in entries] for name, entries in got.items()}

    print("default:           ", ids())
    print("trust-weighted:    ", ids(trust_weighted()))
    print("active_at(now):    ", ids(is_active=active_at(NOW)))
    print("half-life 7 days:  ", ids(half_life(days=7.0)))
    both = trust_weighted(half_life(days=7.0))
    print("trust + half-life: ", ids(both, active_at(NOW)))
    for name, scorer in (
        ("default", default_scorer),
        ("half-life 7d", half_life(days=7.0)),
    ):
        scores = {
            e["id"]: round(scorer(e, context, now=NOW), 2)
            for e in STORE
            if e["type"] == "fact"
        }
        print(f"fact scores, {name}: {scores}")
    got = retrieve_pools(
        STORE, POOLS, context, scorer=both, is_active=active_at(NOW), now=NOW
    )
    messages = to_messages(
        got,
        headers={
            "core": "Corrections (always apply)",
            "facts": "Relevant facts",
            "tasks": "Open tasks",
        },
    )
    messages.append({"role": "user", "content": context["message"]})
    for message in messages:
        print(f"[{message['role']}] {message['content']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
