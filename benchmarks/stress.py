"""Stress poolsplit with big and pathological shapes; print time and peak memory.

Usage: python benchmarks/stress.py [--quick] [--seed N]

Each shape runs twice at two sizes (the second ten times the first, or as
noted) and prints the time of each, the ratio of the times, and the
tracemalloc peak of the larger run. The ratio shows the growth: about 10 is
linear (n log n gives 11 to 13), about 100 would be quadratic. --quick runs
small sizes for CI and asserts only that nothing raises and the ratio stays
below 40. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timezone
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import poolsplit  # noqa: E402
from poolsplit import Pool, explain, retrieve_pools  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
TYPES = ("correction", "task", "fact", "skill", "growth", "episode")
WORDS = ("deploy", "cluster", "billing", "search", "release", "alpha", "auth")
POOLS = [
    Pool("core", 0, 0, ("correction",)),
    Pool("work", 600, 4, ("task",)),
    Pool("facts", 400, 4, ("fact",)),
    Pool("skills", 300, 2, ("skill",)),
    Pool("growth", 200, 1, ("growth",)),
    Pool("episodes", 300, 2, ("episode",)),
]
# One timed call of a shape, and what builds it (the store is not timed).
Run = Callable[[], object]
Maker = Callable[[], Run]

CONTEXT = {"message": "deploy the billing cluster", "tags": ["billing"]}


def store(n: int, seed: int, always_every: int = 50) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "id": f"e{i}",
            "type": TYPES[i % len(TYPES)],
            "content": " ".join(rng.choices(WORDS, k=6)) + f" item{i}",
            "base_priority": rng.randint(1, 10),
            "created": 1_760_000_000 + rng.randint(0, 10_000_000),
            "tags": [rng.choice(WORDS)],
            **({"scope": "always"} if i % always_every == 0 else {}),
        }
        for i in range(n)
    ]


def measure(run: Run, *, memory: bool) -> tuple[float, float]:
    """Seconds of one run, and its tracemalloc peak in MB (a second run)."""
    poolsplit.clear_caches()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    peak = 0.0
    if memory:
        poolsplit.clear_caches()
        tracemalloc.start()
        run()
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    return seconds, peak


ROWS: list[tuple[str, str, float, str, float, float]] = []
QUICK = {"on": False}  # set by --quick


def shape(
    name: str, small: str, large: str, make_small: Maker, make_large: Maker
) -> None:
    """Time both sizes; record the ratio and the larger run's peak memory."""
    small_time, _ = measure(make_small(), memory=False)
    large_time, peak = measure(make_large(), memory=True)
    ratio = large_time / small_time if small_time else float("inf")
    ROWS.append((name, small, small_time, large, large_time, peak))
    print(
        f"{name:<34} {small:>9} {small_time:8.3f}s  {large:>9} {large_time:8.3f}s"
        f"  ratio {ratio:6.1f}  peak {peak:8.1f} MB",
        flush=True,
    )
    if QUICK["on"] and ratio > 40:
        raise SystemExit(f"{name}: time grew {ratio:.0f}x for 10x the size")


def entries_shape(n: int, seed: int) -> Run:
    data = store(n, seed)
    return lambda: retrieve_pools(data, POOLS, CONTEXT, now=NOW)


def always_shape(n: int, seed: int) -> Run:
    data = store(n, seed, always_every=1)
    return lambda: explain(data, POOLS, CONTEXT, now=NOW)


def content_shape(megabytes: float, seed: int) -> Run:
    rng = random.Random(seed)
    words = " ".join(rng.choices(WORDS + ("x" * 12,), k=int(megabytes * 1e6 / 8)))
    data: list[dict[str, Any]] = [
        {"id": "big", "type": "fact", "content": words[: int(megabytes * 1e6)]}
    ]
    data += store(100, seed)
    return lambda: explain(data, POOLS, CONTEXT, now=NOW)


def pools_shape(p: int, seed: int) -> Run:
    data = store(10_000, seed)
    for i, entry in enumerate(data):
        entry["type"] = f"t{i % p}"
    pools = [Pool(f"p{i}", 50, 2, (f"t{i}",)) for i in range(p)]
    return lambda: retrieve_pools(data, pools, CONTEXT, now=NOW)


def numbers_shape(n: int, seed: int) -> Run:
    """Extreme numbers in every numeric field, and a scorer returning them."""
    rng = random.Random(seed)
    extremes = [1e308, -1e308, float("inf"), -float("inf"), 10**300, -(10**300), 0]
    counts = [10**18, -(10**18), 0, 1, 2**63]
    data = [
        {
            "id": rng.choice(extremes + [f"e{i}"]),
            "base_priority": rng.choice(extremes),
            "token_count": rng.choice(counts),
            "created": rng.choice(extremes + [1e300, -1e300]),
            "content": "deploy",
        }
        for i in range(n)
    ]
    pools = [Pool("huge", 10**18, 10**9), Pool("zero", 0, 0), Pool("rest", 2**63, 5)]

    def scorer(
        entry: poolsplit.Entry, context: poolsplit.Context | None, *, now: datetime
    ) -> float:
        return extremes[len(str(entry["id"])) % len(extremes)]

    def run() -> None:
        retrieve_pools(data, pools, CONTEXT, now=NOW)
        explain(data, pools, CONTEXT, now=NOW, scorer=scorer)
        poolsplit.validate(data)

    return run


def cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = poolsplit.main(argv)
    return status, err.getvalue()


def cli_shapes(work: str, scale: int) -> None:
    pools = os.path.join(work, "pools.json")
    with open(pools, "w") as handle:
        json.dump([{"name": "all", "max_tokens": 100, "max_entries": 5}], handle)
    for depth in (1_000, 100_000 * scale):
        path = os.path.join(work, f"deep{depth}.jsonl")
        with open(path, "w") as handle:
            handle.write('{"id": "a", "content": ' + "[" * depth + "]" * depth + "}\n")
        start = time.perf_counter()
        status, err = cli(["retrieve", path, "--pools", pools])
        seconds = time.perf_counter() - start
        one_line = err.count("\n") == 1 and err.startswith("poolsplit: error: ")
        print(
            f"cli nested depth {depth:>9}: exit {status}, one-line error {one_line},"
            f" {seconds:.3f}s: {err.strip()[:80]}"
        )
        assert status == 2 and one_line, err

    def long_line(n: int) -> Run:
        path = os.path.join(work, f"long{n}.json")
        with open(path, "w") as handle:
            json.dump(store(n, 1), handle)  # one JSON array on one line
        return lambda: cli(["retrieve", path, "--pools", pools])

    shape(
        "cli one-line JSON array",
        f"{scale * 1_000}",
        f"{scale * 10_000}",
        lambda: long_line(scale * 1_000),
        lambda: long_line(scale * 10_000),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    QUICK["on"] = args.quick
    seed = args.seed
    k = 1 if args.quick else 100  # the full run is 100 times the quick one
    print(f"Python {sys.version.split()[0]}, poolsplit {poolsplit.__version__}")
    print(f"{'shape':<34} {'small':>9} {'time':>9}  {'large':>9} {'time':>9}")
    shape(
        "entries, 6 pools",
        f"{k * 1_000}",
        f"{k * 10_000}",
        lambda: entries_shape(k * 1_000, seed),
        lambda: entries_shape(k * 10_000, seed),
    )
    shape(
        "always-scope entries (explain)",
        f"{k * 100}",
        f"{k * 1_000}",
        lambda: always_shape(k * 100, seed),
        lambda: always_shape(k * 1_000, seed),
    )
    shape(
        "one entry's content (MB, explain)",
        f"{k * 0.01:g}",
        f"{k * 0.1:g}",
        lambda: content_shape(k * 0.01, seed),
        lambda: content_shape(k * 0.1, seed),
    )
    shape(
        "pools over 10,000 entries",
        f"{k * 10}",
        f"{k * 100}",
        lambda: pools_shape(k * 10, seed),
        lambda: pools_shape(k * 100, seed),
    )
    shape(
        "extreme numbers, every field",
        f"{k * 100}",
        f"{k * 1_000}",
        lambda: numbers_shape(k * 100, seed),
        lambda: numbers_shape(k * 1_000, seed),
    )
    with tempfile.TemporaryDirectory() as work:
        cli_shapes(work, 1 if args.quick else 10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
