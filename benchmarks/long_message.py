"""What a long message costs a recall, and the recalls beside it (issue 48).

    pip install -e . -e memory
    python benchmarks/long_message.py [--entries 3000] [--repeats 15] [--quick]

A SQLite store in a temporary file (``poolsplit_memory.open_store``,
the default lexical ranking) holds ``--entries`` entries written by
``remember`` in namespace ``a`` and as many in namespace ``b`` (a fixed seed:
words of a small vocabulary, six types, each created at a distinct moment of
the past 60 days, so that "yesterday" matches some). Measured in one run, as
medians of ``--repeats`` warm recalls of namespace ``a``:

- a 100-byte question, plain, and one naming a time ("yesterday");
- a 120 KB message (``"yesterday " * 12000``: 8.4 s before issue 48) and a
  1 MiB one (``"yesterday " * 105000``);
- the 100-byte question while another thread recalls the 1 MiB message over
  and over: in the same namespace, then in namespace ``b``.

Printed: each median and its ratio to the plain 100-byte recall (issue 48's
target: at most 10 for the 1 MiB message and for the delay it causes).
Nothing is asserted; pytest never collects this. ``--quick`` (CI): 500
entries a namespace, 5 repeats.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from poolsplit_memory import open_store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
SMALL = "What did we decide about the billing export, and who takes the deploy now?"
SMALL_TIMED = "What did we decide yesterday about the billing export and the deploy?"
LONG = "yesterday " * 12000
MIB = "yesterday " * 105000
TYPES = ("fact", "task", "episode", "skill", "growth", "note")
WORDS = [
    "billing", "export", "deploy", "invoice", "schedule", "review", "customer",
    "report", "budget", "meeting", "release", "client", "dashboard", "migration",
    "backup", "alert", "rotation", "coffee", "garden", "dog", "walk", "harbour",
    "dinner", "Ana", "Bob", "team", "sprint", "ticket", "bug", "fix",
]  # fmt: skip


def fill(store: Any, total: int, seed: int) -> None:
    """``total`` entries by ``remember``, each a distinct moment of 60 days."""
    rng = random.Random(seed)
    for i in range(total):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        store.remember(
            f"{words} ({seed}-{i})",
            type=TYPES[i % len(TYPES)],
            now=NOW - timedelta(days=60) * (i / total),
        )


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """The median of ``repeats`` timed calls, after one untimed."""
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def beside(
    busy: Callable[[], object], call: Callable[[], object], repeats: int
) -> float:
    """:func:`median_ms` of ``call`` while another thread runs ``busy`` over
    and over (it has begun before the first timed call)."""
    stop = threading.Event()
    started = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            started.set()
            busy()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    started.wait()
    try:
        return median_ms(call, repeats)
    finally:
        stop.set()
        thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="CI: small and short")
    args = parser.parse_args(argv)
    entries, repeats = (500, 5) if args.quick else (args.entries, args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "memory.db")
        with open_store(path, namespace="a") as a, open_store(path, namespace="b") as b:
            started = time.perf_counter()
            fill(a, entries, 1)
            fill(b, entries, 2)
            print(
                f"long_message: {entries} entries in each of 2 namespaces "
                f"(SQLite, lexical), filled in {time.perf_counter() - started:.1f} s; "
                f"medians of {repeats}; Python {sys.version.split()[0]}"
            )

            def recall(store: Any, message: str) -> Callable[[], object]:
                return lambda: store.recall(message, now=NOW)

            rows = [
                ("100-byte question", median_ms(recall(a, SMALL), repeats)),
                ("100-byte, naming a time", median_ms(recall(a, SMALL_TIMED), repeats)),
                ('"yesterday " * 12000 (120 KB)', median_ms(recall(a, LONG), repeats)),
                ('"yesterday " * 105000 (1 MiB)', median_ms(recall(a, MIB), repeats)),
                (
                    "100-byte beside 1 MiB, same namespace",
                    beside(recall(a, MIB), recall(a, SMALL), repeats),
                ),
                (
                    "100-byte beside 1 MiB, other namespace",
                    beside(recall(a, MIB), recall(b, SMALL), repeats),
                ),
            ]
    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'recall':<{width}}  {'median ms':>9}  {'x 100-byte':>10}")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:9.2f}  {ms / base:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
