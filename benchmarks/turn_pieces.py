"""Where a warm turn goes: process time of the engine's pieces, per shape.

    python benchmarks/turn_pieces.py [--shape aged] [--entries 100000]
                                     [--turns 30] [--file poolsplit.py]

Builds one store of ``--entries`` of each shape (benchmarks/generate.py),
empties the caches (each shape as if in a process of its own, as run.py's
row groups), runs ten untimed warm calls (``retrieve_pools``, the five
pools), then times ``--turns`` turns, each with the process time inside
``_scan``, ``_Ranking.__init__``, ``_Ranking._score_run``,
``_Ranking._frontier`` and ``_Ranking._plain_from``, and prints their
medians beside the turn's and the floor's (run.py's ``floor_pass``). The
wrappers add a call each, so the pieces read a little high; read them
against each other. It also counts, in one turn, the runs scored, the
positions they span over all pools and the contents whose message factor was
computed. ``--file`` loads another poolsplit.py (an A/B variant). Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import generate  # noqa: E402
import run  # noqa: E402
from engine_ab import load  # noqa: E402

PIECES = ("_scan", "__init__", "_score_run", "_frontier", "_plain_from")
LABELS = ("scan", "init", "score", "front", "plain")  # the columns, in order


def timing(spent: dict[str, float], name: str, fn: Callable[..., Any]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - start

    return timed


def counting(counts: dict[str, int], name: str, fn: Callable[..., Any]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        if name == "runs":  # _score_run(self, start, end, ...)
            counts["positions"] += args[2] - args[1]
        return fn(*args, **kwargs)

    return counted


def shape_row(module: Any, shape: str, entries: int, turns: int) -> None:
    run.as_own_process(module)
    store = generate.make_store(entries, 1, shape)
    pools = [
        module.Pool(p.name, p.max_tokens, p.max_entries, p.types)
        for p in generate.make_pools()
    ]
    contexts = generate.make_contexts(10)
    ranking = module._Ranking
    originals = {name: getattr(ranking, name) for name in PIECES[1:]}
    scan, score_from = module._scan, module._score_from
    spent: dict[str, float] = collections.defaultdict(float)
    module._scan = timing(spent, "_scan", scan)
    for name, fn in originals.items():
        setattr(ranking, name, timing(spent, name, fn))
    for context in contexts:
        module.retrieve_pools(store, pools, context, now=generate.NOW)
    pieces: dict[str, list[float]] = {name: [] for name in PIECES}
    whole = []
    for turn in range(turns):
        spent.clear()
        start = time.process_time()
        module.retrieve_pools(store, pools, contexts[turn % 10], now=generate.NOW)
        whole.append(time.process_time() - start)
        for name in PIECES:
            pieces[name].append(spent[name])
    keys = run.floor_keys(entries)
    floor = []
    for _ in range(turns):
        start = time.process_time()
        run.floor_pass(store, keys)
        floor.append(time.process_time() - start)
    counts: dict[str, int] = collections.defaultdict(int)
    module._scan = scan
    for name, fn in originals.items():
        setattr(ranking, name, fn)
    ranking._score_run = counting(counts, "runs", originals["_score_run"])
    module._score_from = counting(counts, "scored", score_from)
    module.retrieve_pools(store, pools, contexts[4], now=generate.NOW)
    ranking._score_run = originals["_score_run"]
    module._score_from = score_from

    def ms(samples: list[float]) -> str:
        return f"{statistics.median(samples) * 1e3:7.1f}"

    cells = "  ".join(ms(pieces[name]) for name in PIECES)
    print(f"{shape:8s} {ms(whole)}  {cells}  {ms(floor)}", end="")
    print(f"   runs {counts['runs']}, positions {counts['positions']:,},", end="")
    print(f" scored {counts['scored']:,}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", action="append", choices=generate.SHAPES)
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--turns", type=int, default=30)
    p.add_argument(
        "--file", default=os.path.join(os.path.dirname(HERE), "poolsplit.py")
    )
    args = p.parse_args()
    module = load(args.file, 0)
    print(f"{args.file}, {args.entries:,} entries, medians of {args.turns} turns (ms)")
    names = "  ".join(f"{name:>7s}" for name in LABELS)
    print(f"{'shape':8s} {'turn':>7s}  {names}  {'floor':>7s}")
    for shape in args.shape or generate.SHAPES:
        shape_row(module, shape, args.entries, args.turns)


if __name__ == "__main__":
    main()
