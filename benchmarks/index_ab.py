"""Interleaved A/B of poolsplit-memory's recall index: its bounds.

    python benchmarks/index_ab.py [--entries 10000] [--turns 41]

The index ranks candidates by bounds of their scores computed from the
scorer's published numbers (priority x recency x project, and the message
and tag shares), a copy of the rule's shape that must earn its place: A is
the index as shipped, B the same index with every bound taken from
``poolsplit.default_scorer`` instead (the rule itself, about 2 us a call).
Both run turn by turn in alternating order on the stores of
``benchmarks/mcp_recall.py`` (both shapes), every turn's two results are
checked equal, and the medians and B/A are printed. Nothing is asserted
about time; pytest never collects this. Needs poolsplit-memory installed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone
from typing import Any

from mcp_recall import MESSAGES, SHAPES, entries
from poolsplit_memory import _index, default_pools

import poolsplit


def by_scorer(index: Any) -> Any:
    """``index`` with its bounds from default_scorer (B)."""

    def base(position: int, call: Any) -> float:
        entry = index.entries[position]
        return poolsplit.default_scorer(entry, {"project": call.project}, now=call.now)

    def boosted(position: int, call: Any) -> float:
        entry = index.entries[position]
        return poolsplit.default_scorer(entry, call.context, now=call.now)

    index._base = base
    index._boosted_bound = boosted
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=41)
    args = parser.parse_args(argv)
    now = datetime.now(timezone.utc)
    counter = poolsplit.default_token_counter
    for shape in SHAPES:
        store = list(entries(args.entries, shape))
        pools = default_pools({str(entry["type"]) for entry in store})
        a, b = _index.Index(store), by_scorer(_index.Index(store))
        times: dict[str, list[float]] = {"A": [], "B": []}
        for turn in range(args.turns):
            context = {"message": MESSAGES[turn % len(MESSAGES)], "tags": []}
            results = {}
            order = (("A", a), ("B", b)) if turn % 2 else (("B", b), ("A", a))
            for name, index in order:
                start = time.perf_counter()
                results[name] = index.recall(
                    pools, context, now=now, token_counter=counter
                )
                times[name].append(time.perf_counter() - start)
            if results["A"] != results["B"]:
                raise SystemExit(f"A and B differ on turn {turn} ({shape})")
        median_a, median_b = (statistics.median(times[k]) for k in "AB")
        print(
            f"{shape:<7} {args.entries:,} entries, {args.turns} turns: "
            f"A (published numbers) {median_a * 1e3:.2f} ms, "
            f"B (default_scorer) {median_b * 1e3:.2f} ms, B/A {median_b / median_a:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
