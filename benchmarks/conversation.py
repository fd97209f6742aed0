"""Memories as an agent writes them in conversation: the shape scores tie on.

``memories(n, seed)`` gives ``n`` entries the way ``remember`` writes them
during chats: default priority (no ``base_priority``), no tags or project,
``created`` a few minutes to a few hours after the previous one (so the
whole store spans days, and recency barely separates them), first-person
sentences from a vocabulary whose words are drawn by a Zipf law (a few
words such as "work", "weekend" or "sister" in many memories, most in few,
as in real chats), mostly facts and episodes, with three always-scope
corrections first. ``questions(k, seed)`` are messages in the same words.
Deterministic for a seed; no data set is read.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)

PEOPLE = (
    "my sister", "my brother", "mom", "dad", "Maria", "Tom", "my boss", "Priya",
    "my neighbour", "the kids", "Alex", "my partner", "Jonas", "grandma",
)  # fmt: skip
VERBS = (
    "went to", "talked about", "booked", "cancelled", "loved", "hated",
    "bought", "planned", "started", "finished", "forgot", "recommended",
    "visited", "cooked", "fixed", "lost", "found", "painted", "read about",
    "signed up for", "complained about", "asked about", "moved", "sold",
)  # fmt: skip
NOUNS = (
    "work", "weekend", "trip", "dinner", "coffee", "book", "movie", "project",
    "meeting", "dog", "garden", "hiking", "birthday", "gift", "concert", "job",
    "interview", "doctor", "gym", "recipe", "pasta", "train", "flight",
    "hotel", "beach", "camera", "painting", "guitar", "lesson", "school",
    "exam", "party", "apartment", "rent", "car", "bike", "marathon", "yoga",
    "vacation", "budget", "taxes", "insurance", "laptop", "phone", "podcast",
    "novel", "museum", "wedding", "baby", "cat", "vet", "dentist", "salary",
    "promotion", "deadline", "presentation", "conference", "workshop",
    "language", "spanish", "piano", "photography", "pottery", "climbing",
    "swimming", "tennis", "chess", "garden", "tomatoes", "bakery", "cake",
    "sushi", "ramen", "festival", "camping", "tent", "mountains", "lake",
    "island", "passport", "visa", "embassy", "library", "thesis", "course",
    "certificate", "volunteering", "shelter", "charity", "election", "news",
    "headphones", "sneakers", "jacket", "furniture", "sofa", "kitchen",
    "renovation", "plumber", "electrician", "landlord", "roommate", "lease",
    "mortgage", "savings", "stocks", "crypto", "startup", "investor", "pitch",
    "client", "invoice", "report", "spreadsheet", "manager", "team", "hiring",
    "onboarding", "burnout", "therapy", "meditation", "sleep", "diet",
    "allergy", "pollen", "flu", "vaccine", "pharmacy", "glasses", "haircut",
)  # fmt: skip
WHEN = (
    "yesterday", "last weekend", "this morning", "on Friday", "last month",
    "next week", "tonight", "after work", "in the summer", "over the holidays",
)  # fmt: skip
FEELINGS = (
    "and it was great", "and it was stressful", "but it rained",
    "and felt tired", "and wants to go again", "but it was expensive",
    "and laughed a lot", "and was nervous", "", "", "",
)  # fmt: skip
TYPES = ("fact", "episode", "episode", "fact", "note", "task")
CORRECTIONS = (
    "Never schedule anything before 9 am, the user is not a morning person.",
    "Call the user Sam, not Samuel.",
    "The user is vegetarian: never suggest meat dishes.",
)


def _noun(rng: random.Random) -> str:
    """A noun by a Zipf law (weight 1/rank)."""
    return rng.choices(NOUNS, weights=_WEIGHTS)[0]


_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(NOUNS))]


def sentence(rng: random.Random) -> str:
    """One first-person memory of a chat, 8 to 20 words."""
    parts = [
        rng.choice(PEOPLE).capitalize(),
        rng.choice(VERBS),
        "the",
        _noun(rng),
        "and the",
        _noun(rng),
        rng.choice(WHEN),
        rng.choice(FEELINGS),
    ]
    if rng.random() < 0.5:
        parts += ["with", rng.choice(PEOPLE), "at the", _noun(rng)]
    return " ".join(part for part in parts if part) + "."


def dated(n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``n`` entries with unique ids, a type and ``created`` a few minutes to
    a few hours after the previous one, as in a chat; the content is left
    empty for the caller, who draws it from ``rng`` next."""
    created = START
    for number in range(n):
        created += timedelta(minutes=rng.randint(1, 240))
        yield {
            "id": f"m{number:06d}",
            "type": rng.choice(TYPES),
            "content": "",
            "created": created.isoformat(),
        }


def memories(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` entries as ``remember`` writes them in conversation (ids unique)."""
    rng = random.Random(seed)
    for number, entry in enumerate(dated(n, rng)):
        entry["content"] = sentence(rng)
        if number < len(CORRECTIONS):
            entry.update(type="correction", scope="always", content=CORRECTIONS[number])
        yield entry


def questions(k: int, seed: int = 1) -> list[str]:
    """``k`` user messages about the same life."""
    rng = random.Random(seed)
    return [
        f"What did {rng.choice(PEOPLE)} say about the {_noun(rng)} and the "
        f"{_noun(rng)}?"
        for _ in range(k)
    ]
