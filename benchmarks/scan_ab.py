"""Interleaved A/B of the core's scan alone (``_scan``), old file against new.

``python benchmarks/scan_ab.py OLD.py NEW.py`` loads each file as its own
module (``git show main:poolsplit.py > /tmp/old.py`` gives the old one) and
times one ``_scan`` of a generated store per turn and variant, the order
alternated every turn, each variant scanning with its own checked call of
the same context (benchmarks/generate.py's contexts, the five pools of
run.py). It prints per shape each variant's median and the median of the
turn-by-turn ratios NEW / OLD. engine_ab.py times the whole warm turn; this
isolates the pass a change of ``_scan`` touches (issue 52: ``_scan`` split
below radon D at equal speed). Standard library only; private names of the
core are read on purpose, so both files must have ``_scan``,
``_check_call`` and ``_new_turn``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import engine_ab  # noqa: E402
import generate  # noqa: E402
import run  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", help="the A file (e.g. main's poolsplit.py)")
    p.add_argument("new", help="the B file")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--shapes", default="spread,uniform,aged,few")
    p.add_argument("--turns", type=int, default=21)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    modules = {"old": engine_ab.load(args.old, 0), "new": engine_ab.load(args.new, 1)}
    contexts = generate.make_contexts(args.turns, seed=7)
    print(f"{args.size:,} entries, {args.turns} turns, CPU time")
    for shape in args.shapes.split(","):
        store = generate.make_store(args.size, args.seed, shape)
        calls = {
            label: [
                module._check_call(
                    run.pools_for(module),
                    context,
                    module.default_scorer,
                    module.default_token_counter,
                    module.default_is_active,
                    generate.NOW,
                )
                for context in contexts
            ]
            for label, module in modules.items()
        }
        times: dict[str, list[float]] = {"old": [], "new": []}
        for turn in range(args.turns):
            order = ("old", "new") if turn % 2 == 0 else ("new", "old")
            for label in order:
                module, call = modules[label], calls[label][turn]
                bounded = call.query is not None and bool(call.query.words)
                module._new_turn()
                gc.collect()
                start = time.process_time()
                module._scan(store, call, exact=not bounded)
                times[label].append(time.process_time() - start)
        old, new = times["old"], times["new"]
        paired = statistics.median(b / a for a, b in zip(old, new))
        print(
            f"{shape:<8} old {statistics.median(old) * 1e3:8.1f} ms  "
            f"new {statistics.median(new) * 1e3:8.1f} ms  x{paired:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
