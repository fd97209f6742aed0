"""Reach of the time-in-the-message rules (poolsplit_memory._when) on LoCoMo.

    python benchmarks/when_locomo.py DATA.json [--sample 25] [--seed 1]

Oracle-free: no labelled time annotations. For every question of categories
1-4 with evidence, each conversation's ``now`` is one day after its last
session (as ``benchmarks/locomo.py --dated`` asks), and the script counts the
questions in which the rules find a time expression, per category. For those
it also counts how often the window holds the session date of at least one
answering turn (the day a store would have written that memory), as is and
with its end moved seven days later (a memory about an event is written at or
after it). Then it lists a seeded sample of the temporal category's matches,
the phrases matched in questions by frequency, and the phrases matched in the
conversations' turns (each against its own session's date), where false
positives on ordinary speech show.

It reads DATA.json (LoCoMo's format) and writes nothing. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from poolsplit_memory._when import Window, window, windows

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SLACK = timedelta(days=7)


def _session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return when.replace(tzinfo=timezone.utc)


def _sessions(conv: dict[str, Any]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """Each session's date and turns, in order."""
    found = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        turns = conv.get(f"session_{n}") or []
        if turns:
            found.append((_session_date(conv[f"session_{n}_date_time"]), turns))
        n += 1
    return found


def _holds(found: Window, days: list[datetime], slack: timedelta) -> bool:
    """Whether the window (its end moved by ``slack``) holds one of ``days``."""
    return any(found.start <= d < found.end + slack for d in days)


def _short(found: Window) -> str:
    """The window's days, first..last."""
    first: str = found.start.date().isoformat()
    last: str = (found.end - timedelta(days=1)).date().isoformat()
    return first if first == last else f"{first}..{last}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--sample", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))

    asked: Counter[int] = Counter()
    matched: Counter[int] = Counter()
    holds: Counter[int] = Counter()
    holds_slack: Counter[int] = Counter()
    phrases: Counter[str] = Counter()
    temporal: list[str] = []
    turn_count = 0
    turn_phrases: Counter[str] = Counter()
    turn_examples: dict[str, str] = {}
    for sample in samples:
        sessions = _sessions(sample["conversation"])
        created: dict[str, datetime] = {}
        for when, turns in sessions:
            for turn in turns:
                created[str(turn["dia_id"])] = when
                turn_count += 1
                for found in windows(str(turn.get("text", "")), when):
                    key = " ".join(found.phrases[0].lower().split())
                    turn_phrases[key] += 1
                    turn_examples.setdefault(key, str(turn["text"]))
        now = max(when for when, _ in sessions) + timedelta(days=1)
        for q in sample.get("qa", []):
            category = q.get("category")
            evidence = [created[e] for e in q.get("evidence") or [] if e in created]
            if category not in CATEGORIES or not evidence:
                continue
            asked[category] += 1
            found = window(str(q["question"]), now)
            if found is None:
                continue
            matched[category] += 1
            holds[category] += _holds(found, evidence, timedelta(0))
            holds_slack[category] += _holds(found, evidence, SLACK)
            phrases.update(" ".join(p.lower().split()) for p in found.phrases)
            if category == 2:
                days = sorted({d.date().isoformat() for d in evidence})
                temporal.append(
                    f"  {q['question']!r}\n    matched {list(found.phrases)} -> "
                    f"{_short(found)} (now {now.date()}); answering turns written "
                    f"{', '.join(days)}"
                )

    print(f"{args.data.name}: questions with an answering turn;", end=" ")
    print("now = the last session + 1 day")
    print(f"{'category':<12} {'questions':>9} {'with time':>10} {'window holds':>13} "
          f"{'+7 days':>8}")  # fmt: skip
    for category, name in CATEGORIES.items():
        m, n = matched[category], asked[category]
        print(
            f"{name:<12} {n:>9} {m:>5} ({m / max(1, n):4.0%})"
            f" {holds[category]:>6} of {m:<4} {holds_slack[category]:>4} of {m}"
        )
    print(f"\nphrases matched in questions: {dict(phrases.most_common())}")
    rng = random.Random(args.seed)
    print(f"\ntemporal (category 2) matches, a sample of {args.sample}:")
    for line in sorted(rng.sample(temporal, min(args.sample, len(temporal)))):
        print(line)
    with_time = sum(turn_phrases.values())
    print(f"\nturns: {turn_count}, time expressions in them: {with_time}")
    print("their phrases by frequency (the first turn that has each):")
    for key, count in turn_phrases.most_common():
        print(f"  {count:>4}  {key!r}: {turn_examples[key][:110]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
