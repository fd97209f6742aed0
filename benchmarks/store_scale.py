"""Store.recall on a store filled by ``remember``: warm, after a write, first.

    pip install 'poolsplit-memory[postgres]'            # or the wheels
    eval "$(bash scripts/start-postgres.sh)"             # for the PostgreSQL rows
    python benchmarks/store_scale.py [--sizes 100,10000] [--turns 30]
                                     [--pg-dsn URL] [--profile] [--repeat N]

For each backend (SQLite; PostgreSQL with ``--pg-dsn`` or
``POOLSPLIT_PG_DSN``, else a line saying it is skipped) and each size, a
namespace is filled by ``Store.remember``, one call per memory, as an
agent fills it: conversational text (``conversation.memories``), default
priority, every entry the same age (one ``now``), so scores tie on all but
the message. Then ONE FRESH PROCESS per row (this script with ``--row``)
opens the store and times:

- ``first``: the first recall after ``open_store`` (the open itself is
  printed apart), as a server's first request after it starts;
- ``second``: the recall after it, a new question (it builds the recall
  index the first one is served without);
- ``warm``: a recall with nothing written since the last one;
- ``after write``: a recall right after one ``remember`` (timed apart:
  ``write``, as the store may bring its snapshot forward in the write);

warm and after-write alternate, each with a new question, after five
untimed warm recalls. Printed: medians, in wall time and in this process's
CPU time (``time.process_time``: on a shared machine a recall that comes
right after another is preempted more often than one after the write's
wait, so warm wall times read high), and the ratios the issue sets
targets for (warm at 10,000 <= 3x warm at 100; after write <= 1.5x warm;
first at 10,000 <= 300 ms), and the process's CPU time of the first recall
(``first cpu``: the wall time less what the other processes of a shared
machine took). ``--profile`` adds, per row, cProfile's top
functions by cumulative time for the first recall and for 20 warm recalls,
each with its share of the whole. ``--repeat N`` runs every size's row N
times, the sizes alternating (100, 10000, 100, ...; a store of the
smaller sizes filled again each time, the largest once), and the ratios
are those of the medians over the runs, each run's warm ratio beside
them: one run's ratio moves with the load of the minute (2.5-6x on one
code). Nothing is asserted; pytest never
collects this. PostgreSQL rows use a database of their own
(``poolsplit_scale_PID_N``, dropped at the end).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from typing import Any

from conversation import memories, questions, sentence
from poolsplit_memory import open_store

WARM_UP = 5
AGE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)  # every entry's created
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def fill(url: str, size: int) -> float:
    """``size`` memories written by ``remember``; the seconds it took."""
    started = time.perf_counter()
    with open_store(url, namespace="ada") as store:
        for entry in memories(size):
            store.remember(
                entry["content"],
                type=entry["type"],
                scope=entry.get("scope"),
                now=AGE,
            )
    return time.perf_counter() - started


def _profiled(call: Any, repeat: int) -> str:
    """cProfile over ``repeat`` calls: the top 12 functions by cumulative
    time, then the top 10 by own time, each with its share of the total."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(repeat):
        call()
    profile.disable()
    stats = pstats.Stats(profile)
    table = stats.stats  # type: ignore[attr-defined]
    total = max(stats.total_tt, 1e-12)  # type: ignore[attr-defined]
    lines = []
    for title, column, count in (("cumulative", 3, 12), ("own time", 2, 10)):
        lines.append(f"    by {title}:")
        ranked = sorted(table.items(), key=lambda item: item[1][column], reverse=True)
        for (path, line, name), numbers in ranked[:count]:
            seconds = numbers[column]
            where = f"{os.path.basename(path)}:{line}({name})"
            share = seconds / total
            lines.append(f"    {share:6.1%} {seconds * 1e3 / repeat:9.2f} ms  {where}")
    return "\n".join(lines)


def row(url: str, turns: int, profile: bool) -> dict[str, Any]:
    """One backend and size, in this (fresh) process."""
    asked = iter(questions(2 * turns + WARM_UP + 25, seed=3))
    import random

    rng = random.Random(5)
    started = time.perf_counter()
    store = open_store(url, namespace="ada")
    opened = time.perf_counter() - started
    report: dict[str, Any] = {"open": opened}
    try:
        message = next(asked)
        if profile:
            text = _profiled(lambda: store.recall(message, now=NOW), 1)
            report["profile first"] = text
            report["first"] = None
        else:
            started, used = time.perf_counter(), time.process_time()
            store.recall(message, now=NOW)
            report["first"] = time.perf_counter() - started
            report["first cpu"] = time.process_time() - used
        started = time.perf_counter()
        store.recall(next(asked), now=NOW)
        report["second"] = time.perf_counter() - started
        for _ in range(WARM_UP - 1):
            store.recall(next(asked), now=NOW)
        samples: dict[str, list[float]] = {"warm": [], "after write": [], "write": []}
        cpu: dict[str, list[float]] = {"warm": [], "after write": []}
        for number in range(2 * turns):
            kind = "warm" if number % 2 else "after write"
            if kind == "after write":
                started = time.perf_counter()
                store.remember(sentence(rng), type="fact", now=AGE)
                samples["write"].append(time.perf_counter() - started)
            message = next(asked)
            started, used = time.perf_counter(), time.process_time()
            store.recall(message, now=NOW)
            samples[kind].append(time.perf_counter() - started)
            cpu[kind].append(time.process_time() - used)
        report.update({k: statistics.median(v) for k, v in samples.items()})
        report.update({f"{k} cpu": statistics.median(v) for k, v in cpu.items()})
        if profile:
            message = next(asked)
            report["profile warm"] = _profiled(
                lambda: store.recall(message, now=NOW), 20
            )
    finally:
        store.close()
    return report


def _database(dsn: str, number: int) -> tuple[str, Any]:
    """A database of its own on the server ``dsn`` names, and how to drop it."""
    import psycopg

    name = f"poolsplit_scale_{os.getpid()}_{number}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    base, _, tail = dsn.rpartition("/")
    query = tail.partition("?")[2]
    url = f"{base}/{name}" + (f"?{query}" if query else "")

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return url, drop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--row", metavar="URL")
    args = parser.parse_args(argv)
    if args.row:
        print(json.dumps(row(args.row, args.turns, args.profile)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = ["SQLite"] + (["PostgreSQL"] if args.pg_dsn else [])
    if not args.pg_dsn:
        print("PostgreSQL: skipped (no --pg-dsn, no POOLSPLIT_PG_DSN)")
    print(f"Python {sys.version.split()[0]}, {args.turns} recalls of each kind per row")
    header = (
        "backend        size   fill s   open ms  first ms  (cpu)  second ms"
        "  warm ms  after-write ms  (CPU: warm  after-write)  write ms"
    )
    print(header)
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as folder:
        for backend in backends:
            runs: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
            drops: list[Any] = []
            try:
                for repeat in range(args.repeat):
                    for size in sizes:
                        # A small store is filled again for each run (the
                        # rows' 30 writes would grow it by a third); the
                        # largest is filled once (its rows add 0.3% each).
                        if repeat and size >= max(sizes):
                            url, filled = runs[size][0]["url"], 0.0
                        elif backend == "SQLite":
                            url = os.path.join(folder, f"scale-{size}-{repeat}.db")
                            filled = fill(url, size)
                        else:
                            url, drop = _database(args.pg_dsn, len(drops))
                            drops.append(drop)
                            filled = fill(url, size)
                        report = _run(here, url, args)
                        report["url"] = url
                        runs[size].append(report)
                        _print_row(backend, size, filled, report)
            finally:
                for drop in drops:
                    drop()
            _print_ratios(backend, sizes, runs)
    return 0


def _run(here: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One row in a fresh process."""
    command = [sys.executable, __file__, "--row", url, "--turns", str(args.turns)]
    if args.profile:
        command.append("--profile")
    out = subprocess.run(
        command, check=True, capture_output=True, text=True, cwd=here
    ).stdout
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


def _print_row(backend: str, size: int, filled: float, report: dict[str, Any]) -> None:
    first = report["first"]
    first_ms = "profiled" if first is None else f"{first * 1e3:.2f}"
    cpu = report.get("first cpu")
    cpu_ms = "" if cpu is None else f"{cpu * 1e3:.0f}"
    opened = report["open"] * 1e3
    print(
        f"{backend:<11} {size:>7} {filled:8.1f} {opened:9.2f} "
        f"{first_ms:>9} {cpu_ms:>6} {report['second'] * 1e3:10.2f} "
        f"{report['warm'] * 1e3:8.2f} "
        f"{report['after write'] * 1e3:15.2f}"
        f"  {report['warm cpu'] * 1e3:11.2f} "
        f"{report['after write cpu'] * 1e3:12.2f}"
        f"  {report['write'] * 1e3:8.2f}"
    )
    for kind in ("profile first", "profile warm"):
        if kind in report:
            print(f"  {kind} ({backend}, {size}):\n{report[kind]}")


def _print_ratios(
    backend: str, sizes: list[int], runs: dict[int, list[dict[str, Any]]]
) -> None:
    """The targets' ratios, from the medians over the runs of each size;
    with several runs, each run's warm ratio too (run k of each size)."""
    small, large = min(sizes), max(sizes)

    def median(size: int, key: str) -> float:
        return float(statistics.median(report[key] for report in runs[size]))

    firsts = [report["first"] for report in runs[large]]
    if None in firsts:
        first_ms = "profiled"
    else:
        first_ms = " / ".join(f"{first * 1e3:.0f}" for first in firsts) + " ms"
    print(f"{backend}: first at {large}: {first_ms} (target <= 300 ms)")
    for clock in ("", " cpu"):
        warm = median(large, "warm" + clock) / median(small, "warm" + clock)
        after = [
            f"after write / warm at {n}: "
            f"{median(n, 'after write' + clock) / median(n, 'warm' + clock):.2f}"
            for n in sizes
        ]
        each = ""
        if len(runs[large]) > 1:
            ratios = [
                big["warm" + clock] / little["warm" + clock]
                for big, little in zip(runs[large], runs[small])
            ]
            each = " (runs: " + ", ".join(f"{r:.2f}" for r in ratios) + ")"
        print(
            f"{backend}{' CPU' if clock else ''}: warm {large}/{small} "
            f"{warm:.2f}x{each} (target <= 3); " + "; ".join(after) + " (target <= 1.5)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
