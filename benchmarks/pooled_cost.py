"""What ranking every pool on its own costs a warm recall (issue 48).

    pip install poolsplit-memory            # or the wheels of the tree to measure
    python benchmarks/pooled_cost.py [--entries 10000] [--recalls 200] [--repeat 3]

A store (SQLite, in a temporary folder) is filled by one ``import_jsonl`` of
``--entries`` conversational memories (``conversation.memories``: five
types, three always-scope corrections, one age, default priority, so scores
tie on all but the message), then, for each pool list below, warm recalls
of ``--recalls`` different questions are timed in this process's CPU time
(``time.process_time``: the machine is shared), after ten untimed ones;
``--repeat`` alternates the pool lists that many times and prints the
median of the runs, with each run's figure:

- ``defaults``: the store's default pools (disjoint types: each pool walks
  its own part's index);
- ``disjoint``: three typed pools, the last naming the types it takes;
- ``spill-over``: the same with the last pool of every type (it admits the
  types the first two admit: one loop scores every entry).

To compare two trees, run it with each tree's wheels installed in its own
venv, alternating (benchmarks/README.md, "Every pool its own room", gives
the commands and figures). Nothing is asserted; pytest never collects this.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone

from conversation import memories, questions
from poolsplit_memory import open_store

from poolsplit import Pool

AGE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
POOLS: dict[str, Sequence[Pool] | None] = {
    "defaults": None,
    "disjoint": [
        Pool("facts", 400, 4, ("fact",)),
        Pool("tasks", 400, 4, ("task",)),
        Pool("rest", 600, 5, ("episode", "note", "correction")),
    ],
    "spill-over": [
        Pool("facts", 400, 4, ("fact",)),
        Pool("tasks", 400, 4, ("task",)),
        Pool("rest", 600, 5),
    ],
}


def jsonl(size: int) -> str:
    lines = []
    for number, entry in enumerate(memories(size)):
        row = {
            "id": f"m{number}",
            "type": entry["type"],
            "content": entry["content"],
            "created": AGE.isoformat(),
        }
        if entry.get("scope"):
            row["scope"] = entry["scope"]
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def cpu_ms(url: str, pools: Sequence[Pool] | None, asked: Sequence[str]) -> float:
    """CPU milliseconds a warm recall, averaged over ``asked``."""
    with open_store(url, namespace="ada", pools=pools) as store:
        for message in asked[:10]:
            store.recall(message, now=NOW)
        started = time.process_time()
        for message in asked:
            store.recall(message, now=NOW)
        return (time.process_time() - started) * 1000.0 / len(asked)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        url = os.path.join(folder, "memory.db")
        with open_store(url, namespace="ada") as store:
            store.import_jsonl(io.StringIO(jsonl(args.entries)))
        asked = questions(args.recalls)
        runs: dict[str, list[float]] = {name: [] for name in POOLS}
        for _ in range(args.repeat):
            for name, pools in POOLS.items():
                runs[name].append(cpu_ms(url, pools, asked))
    print(
        f"pooled_cost: {args.entries} entries, {args.recalls} warm recalls, "
        f"{args.repeat} runs; Python {sys.version.split()[0]}"
    )
    print(f"{'pools':<12}{'median CPU ms':>15}  runs")
    for name, values in runs.items():
        each = " ".join(f"{v:.2f}" for v in values)
        print(f"{name:<12}{statistics.median(values):>15.2f}  {each}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
