"""What a LangGraph turn over another BaseStore spends, piece by piece.

    pip install 'poolsplit-memory[langgraph]'
    python benchmarks/other_store_turn.py [--entries 10000] [--questions 12]
                                          [--rounds 3]

The adapters read another store's namespace whole every turn
(``load_entries``), build it (the entries checked by the store's rule and
split by pool with each pool's statistics: ``langgraph._build``) when the
read changed, and score each pool by one loop over its part. This times,
on an ``InMemoryStore`` of ``--entries`` conversational memories
(``conversation.memories``), in one process: the read, what it is
compared by (``langgraph._seen``: ``json.dumps`` and ``repr``), the
build, and a recall of each of ``--questions`` new questions two ways on
builds of their own: by one loop a part (``scan``, what the adapters do),
and through each part's index (a part builds it at its second recall, as
in the store's snapshots), the two ways alternating question by
question. ``--rounds`` repeats it all; printed: medians in CPU
milliseconds, and per round the sum over the questions of each way (what
a build's index costs and saves over its questions). Nothing is
asserted; pytest never collects this.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from conversation import memories, sentence
from langgraph.store.memory import InMemoryStore
from poolsplit_memory import langgraph as adapter
from poolsplit_memory._pooled import lexical
from poolsplit_memory._terms import read_times

from poolsplit import default_token_counter


def cpu_ms(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    started = time.process_time()
    got = call(*args)
    return (time.process_time() - started) * 1000, got


def recall(built: Any, message: str, scan: bool) -> Any:
    at = datetime.now(timezone.utc)
    return built.parts.recall(
        built.read.pools,
        {"message": message},
        now=at,
        token_counter=default_token_counter,
        relevance=lexical(message, at, read_times(message, at)),
        scan=scan,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    store = InMemoryStore()
    space = ("memories", "bench")
    for entry in memories(args.entries):
        store.put(space, str(entry["id"]), entry)
    options = adapter._options(None, space, "lexical", None)
    adapter.load_entries(store, space)  # the size hint: one search from now on
    times: dict[str, list[float]] = {
        k: [] for k in ("read", "compare", "build", "scan", "index")
    }
    sums = []
    for round_ in range(args.rounds):
        took, values = cpu_ms(adapter.load_entries, store, space)
        times["read"].append(took)
        times["compare"].append(cpu_ms(adapter._seen, values)[0])
        took, scanned = cpu_ms(adapter._build, values, options)
        times["build"].append(took)
        indexed = adapter._build(values, options)
        total = {"scan": 0.0, "index": 0.0}
        for n in range(args.questions):
            message = sentence(random.Random(1000 * round_ + n))
            ways = [("scan", scanned, True), ("index", indexed, False)]
            for way, built, scan in ways if n % 2 == 0 else ways[::-1]:
                took, _ = cpu_ms(recall, built, message, scan)
                times[way].append(took)
                total[way] += took
        sums.append(total)
    print(
        f"{args.entries:,} entries, {args.rounds} rounds of {args.questions} "
        "questions; CPU ms, medians"
    )
    for name, samples in times.items():
        print(f"  {name:7} {statistics.median(samples):8.1f}")
    for number, total in enumerate(sums):
        print(
            f"  round {number}: the questions' recalls by one loop {total['scan']:.0f}"
            f" ms, through the indexes {total['index']:.0f} ms (their builds in)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
