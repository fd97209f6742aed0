"""Interleaved A/B of poolsplit-memory's recall index: its bounds.

    python benchmarks/index_ab.py [--entries 10000] [--turns 41]
    python benchmarks/index_ab.py --agent-loop [--sizes 1000,10000,100000]

``--agent-loop``: whether the index earns its place at all (issue 26). A
SQLite store of each size (``mcp_recall.entries``, shape ``spread``), the
agent's loop in this process: each turn, for A (the store's recall, through
the index kept up to date write by write) and B (the same store handing the
core every entry of the namespace), in alternating order: ``remember``,
then a recall (after the write), then another (warm); both modes' results
are checked equal on every warm recall. Medians and B/A are printed.

The index ranks candidates by bounds of their scores computed by the
scorer's published rule, ``poolsplit.base_score`` (priority x recency x
project, and the message and tag shares, in an order of its own), which
must earn its place: A is
the index as shipped, B the same index with every bound taken from
``poolsplit.default_scorer`` instead (the rule itself, about 2 us a call).
Both run turn by turn in alternating order on the stores of
``benchmarks/mcp_recall.py`` (both shapes), every turn's two results are
checked equal, and the medians and B/A are printed. Nothing is asserted
about time; pytest never collects this. Needs poolsplit-memory installed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from typing import Any

from mcp_recall import MESSAGES, SHAPES, entries
from poolsplit_memory import _index, default_pools, open_store

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


def core_recall(
    self: Any,
    pools: Any,
    context: Any,
    *,
    now: Any,
    token_counter: Any,
    relevance: Any = None,
) -> Any:
    """B: the core on every entry of the namespace, no index (with the
    lexical ranking's scorer when the store gives its relevance)."""
    scorer = (
        poolsplit.default_scorer if relevance is None else relevance.scorer(context)
    )
    return poolsplit.retrieve_pools(
        self.entries,
        pools,
        context,
        scorer=scorer,
        now=now,
        token_counter=token_counter,
    )


def agent_loop(sizes: list[int], turns: int) -> None:
    indexed = _index.Index.recall
    for total in sizes:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "memory.db")
            lines = "".join(json.dumps(e) + "\n" for e in entries(total, "spread"))
            store = open_store(path)
            store.import_jsonl(io.StringIO(lines))
            store.recall("warm up")
            times: dict[str, list[float]] = {
                f"{kind} {mode}": [] for kind in ("after", "warm") for mode in "AB"
            }
            try:
                for turn in range(turns):
                    message = MESSAGES[turn % len(MESSAGES)]
                    for mode in "AB" if turn % 2 else "BA":
                        _index.Index.recall = indexed if mode == "A" else core_recall
                        store.remember(f"turn {turn}: {message}", type="episode")
                        for kind in ("after", "warm"):
                            start = time.perf_counter()
                            got = store.recall(message)
                            times[f"{kind} {mode}"].append(time.perf_counter() - start)
                        _index.Index.recall = core_recall if mode == "A" else indexed
                        if store.recall(message).ids() != got.ids():
                            raise SystemExit(f"A and B differ on turn {turn}")
            finally:
                _index.Index.recall = indexed
                store.close()
        median = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(
            f"{total:>7,} entries, {turns} turns: after a write "
            f"A {median['after A']:.2f}"
            f" ms, B {median['after B']:.2f} ms (B/A "
            f"{median['after B'] / median['after A']:.1f}); warm A "
            f"{median['warm A']:.2f} ms, B {median['warm B']:.2f} ms (B/A "
            f"{median['warm B'] / median['warm A']:.1f})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=41)
    parser.add_argument("--agent-loop", action="store_true")
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args(argv)
    if args.agent_loop:
        agent_loop([int(s) for s in args.sizes.split(",")], args.turns)
        return 0
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
