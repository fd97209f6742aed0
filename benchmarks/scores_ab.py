"""Does the semantic ranking's one-loop scorer earn its place? (issue 29's rule)

    pip install 'poolsplit-memory[semantic]'   # numpy; the model is not loaded
    python benchmarks/scores_ab.py [--sizes 1000,10000] [--turns 41]

The semantic ranking's factor is above 1 for nearly every entry, so no recall
index can skip entries: ``_ranking.recall_by_scores`` scores every entry in
one loop (the base by ``poolsplit.base_score``, the rule default_scorer
calls, of fields read once per entry) and hands the core the best few.
Its plain alternative is ``poolsplit.retrieve_pools`` with the ranking's
scorer on every entry. This times both on ``mcp_recall.entries``'s
``spread`` store with the same hybrid relevance (random unit vectors stand in
for the model's, which only the cosines' values depend on), interleaved turn
by turn, the order swapped every turn, and checks every turn's two results
equal. It prints the medians and plain/scan; a ratio of at least 1.25 (the
scan saves 20% of the recall) keeps the scan. Nothing is asserted on time;
pytest never collects this.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any

import numpy
from mcp_recall import MESSAGES, entries
from poolsplit_memory import default_pools
from poolsplit_memory._ranking import Statistics, recall_by_scores
from poolsplit_memory._semantic import Hybrid, Vectors

import poolsplit

_DIMENSIONS = 384


class _RandomQueries:
    """Stands in for the embedder: a fixed random unit vector per message."""

    def query(self, message: str) -> Any:
        seed = sum(message.encode()) % 10_000
        vector = numpy.random.default_rng(seed).standard_normal(_DIMENSIONS)
        return (vector / numpy.linalg.norm(vector)).astype("<f4")


def run(size: int, turns: int) -> tuple[float, float]:
    """(median ms of the scan, of the plain core) at ``size`` entries."""
    stored = list(entries(size, "spread"))
    stats = Statistics(stored)
    rows = numpy.random.default_rng(1).standard_normal((size, _DIMENSIONS))
    rows /= numpy.linalg.norm(rows, axis=1, keepdims=True)
    vectors = Vectors(_RandomQueries(), stored, rows.astype("<f4"))
    pools = default_pools({str(e.get("type", "note")) for e in stored})
    now = datetime.now(timezone.utc)
    counter = poolsplit.default_token_counter
    scan: list[float] = []
    plain: list[float] = []
    for turn in range(turns):
        message = MESSAGES[turn % len(MESSAGES)]
        context: dict[str, Any] = {"message": message, "tags": [], "project": None}
        relevance = Hybrid(stats, message, vectors)
        got = {}
        for side in ("scan", "plain") if turn % 2 else ("plain", "scan"):
            started = time.perf_counter()
            if side == "scan":
                got[side] = recall_by_scores(
                    stats,
                    stored,
                    pools,
                    context,
                    token_counter=counter,
                    now=now,
                    relevance=relevance,
                )
                scan.append(time.perf_counter() - started)
            else:
                got[side] = poolsplit.retrieve_pools(
                    stored,
                    pools,
                    context,
                    scorer=stats.scorer(context, relevance=relevance),
                    token_counter=counter,
                    now=now,
                )
                plain.append(time.perf_counter() - started)
        if got["scan"] != got["plain"]:
            raise SystemExit(f"SELECTIONS DIFFER at {size} entries, turn {turn}")
    return statistics.median(scan) * 1000, statistics.median(plain) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=41)
    args = parser.parse_args(argv)
    version = sys.version.split()[0]
    print(f"== the semantic scan against the plain core, python {version}")
    for size in (int(s) for s in args.sizes.split(",")):
        scan, plain = run(size, args.turns)
        print(
            f"{size:>7,} entries, {args.turns} turns: scan {scan:.2f} ms, "
            f"plain core {plain:.2f} ms, plain/scan {plain / scan:.2f}; "
            "same picks every turn"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
