"""Interleaved A/B of poolsplit engines: a warm turn of five pools, per store shape.

``python benchmarks/engine_ab.py A.py B.py [C.py ...]`` loads each file as its
own module and times a warm ``retrieve_pools`` turn of each, the order rotated
every turn (benchmarks/run.py's ``alternate``), at each size and store shape.
It prints, per row, each variant's median ms and its paired ratio to the first
file (the median of turn-by-turn ratios), and checks that every variant picks
the same ids every turn. A mechanism keeps its place in poolsplit.py only if
the variant with it saves 20% of a warm turn at 10,000 entries on some shape
(benchmarks/README.md, "Engine A/B"). Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from types import ModuleType

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import generate  # noqa: E402
import run  # noqa: E402

# generate.py's shapes; "few" is the bucketed one (priority 1-3).
SHAPES = ("spread", "uniform", "aged", "few")


def load(path: str, number: int) -> ModuleType:
    """``path`` as a module of its own (dataclasses look it up in sys.modules)."""
    name = f"poolsplit_variant_{number}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path!r} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="poolsplit.py variants; the first is A")
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--turns", type=int, default=21)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="also write every turn's times to this file")
    p.add_argument(
        "--cpu",
        action="store_true",
        help="time the process's CPU time, not the wall clock (a shared machine)",
    )
    args = p.parse_args()
    dump: list[dict[str, object]] = []
    modules = {os.path.basename(f): load(f, i) for i, f in enumerate(args.files)}
    labels = list(modules)
    contexts = generate.make_contexts(2 * args.turns, seed=7)
    print("entries  shape    " + "  ".join(f"{x[:18]:>18}" for x in labels))
    for n in map(int, args.sizes.split(",")):
        for shape in args.shapes.split(","):
            store = generate.make_store(n, args.seed, shape)
            variants = {
                label: run.calls(
                    mod.retrieve_pools, store, run.pools_for(mod), contexts
                )
                for label, mod in modules.items()
            }
            clock = time.process_time if args.cpu else time.perf_counter
            timed = run.alternate(variants, args.turns, clock)
            base_times, base_picks = timed[labels[0]]
            cells = []
            for label in labels:
                times, picks = timed[label]
                if picks != base_picks:
                    raise SystemExit(f"{label} picks differ from {labels[0]}")
                paired = statistics.median(t / b for t, b in zip(times, base_times))
                cells.append(f"{statistics.median(times) * 1e3:8.2f} ms x{paired:5.2f}")
            print(f"{n:>7,}  {shape:<7}  " + "  ".join(cells), flush=True)
            every = {label: timed[label][0] for label in labels}
            dump.append({"n": n, "shape": shape, "times": every})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dump, f)


if __name__ == "__main__":
    main()
