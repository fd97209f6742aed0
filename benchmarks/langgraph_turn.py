"""The LangGraph turn with memory at 100 and 10,000 memories (issue 35).

    pip install 'poolsplit-memory[langgraph]' langgraph-checkpoint-postgres
    eval "$(bash scripts/start-postgres.sh)"         # for the PostgresStore rows
    python benchmarks/langgraph_turn.py [--sizes 100,10000] [--turns 30]
                                        [--pg-dsn URL] [--quick]
                                        [--stores PoolsplitStore,InMemoryStore,...]

For each store (``PoolsplitStore``, the adapter's own BaseStore on a
SQLite file; ``InMemoryStore``; LangGraph's ``PostgresStore`` with
``--pg-dsn`` or ``POOLSPLIT_PG_DSN``, else a line saying it is skipped) and
each size, ONE FRESH PROCESS (this script with ``--row``) fills one user's
namespace with conversational memories (``conversation.memories``: default
priority, written minutes to hours apart, so scores tie), builds
``create_react_agent(model, [], prompt=memory_prompt(), store=store)``
with a fake chat model that answers at once, and times each turn: the
agent's ``invoke`` (``turn``) and, inside it, the prompt callable alone
(``memory``: the recall, what this package adds), each in wall time and in
CPU time (the process's for a turn, the prompt thread's for memory: on a
shared machine the wall clock counts the time other processes held the
cores). Each turn asks a new question. Two kinds of turn alternate:
``warm`` (nothing written since the last turn) and ``after write`` (one
memory put into the namespace just before, untimed, as ``remember_tool``
does). Five untimed turns warm up. Printed per row: the median of each
and, per store, the 10,000/100 ratio of the medians. A PoolsplitStore
recalls through the store's index; any other store is read whole every
turn (O(namespace): slower, and expected to be), and its entries checked
and split by pool again when the read changed (so an ``after write`` turn
builds, a ``warm`` one compares). Nothing is asserted; pytest never
collects this.

PostgreSQL rows live in a schema of their own (``poolsplit_bench_PID``,
dropped at the end) of the database the DSN names.
``--quick``: sizes 100 and 1,000, 9 turns. ``--stores``: the rows to run
(both by default). ``--repeat N`` runs each store's rows N times,
alternating the sizes (100, 10,000, 100, ...), so that a change of load on
a shared machine falls on both sizes; the ratios are then those of the
medians over the N rows of each size. ``--ab A,B`` (two checkouts, each
with ``poolsplit.py`` and ``memory/``) runs each row once per checkout,
first on its path, the two back to back (A first at even repeats, B first
at odd ones), and prints each one's ratios and B's medians over A's.
``--ab A=InMemoryStore,B=PoolsplitStore`` gives a side its own store (then
``--stores`` names one row, its label): issue 52's "no slower than
today", an older checkout's InMemoryStore turn against this one's
PoolsplitStore turn.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

WARM_UP = 5
KINDS = ("warm", "after write")
PARTS = ("turn", "memory", "turn cpu", "memory cpu")


def _agent(store: Any, timings: list[float], cpu: list[float]) -> Any:
    """The prebuilt agent, its prompt callable timed into ``timings`` (and
    its thread's CPU time into ``cpu``)."""
    from langchain_core.language_models.fake_chat_models import (
        FakeMessagesListChatModel,
    )
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent
    from poolsplit_memory.langgraph import memory_prompt

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    prompt = memory_prompt()

    def timed(state: Any) -> Any:
        started, used = time.perf_counter(), time.thread_time()
        try:
            return prompt(state)
        finally:
            timings.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - used)

    model = Model(responses=[AIMessage("Noted.")])  # answered again each turn
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in 1.x
        return create_react_agent(model, [], prompt=timed, store=store)


@contextmanager
def _store(kind: str, dsn: str | None) -> Iterator[Any]:
    if kind == "InMemoryStore":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore()
        return
    if kind == "PoolsplitStore":
        import tempfile

        from poolsplit_memory.langgraph import PoolsplitStore

        with (
            tempfile.TemporaryDirectory() as folder,
            PoolsplitStore(os.path.join(folder, "memory.db")) as store,
        ):
            yield store
        return
    import psycopg
    from langgraph.store.postgres import PostgresStore

    assert dsn is not None
    schema = f"poolsplit_bench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            joiner = "&" if "?" in dsn else "?"
            url = f"{dsn}{joiner}options=-csearch_path%3D{schema}"
            with PostgresStore.from_conn_string(url) as store:
                store.setup()
                yield store
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def row(kind: str, size: int, turns: int, dsn: str | None) -> dict[str, Any]:
    """One store and size, in this process: medians in seconds per kind."""
    import random

    from conversation import memories, questions, sentence
    from langgraph.store.base import PutOp

    space = ("memories", "ada")
    config = {"configurable": {"user_id": "ada", "thread_id": "t"}}
    rng = random.Random(7)
    asked = iter(questions(WARM_UP + 2 * turns + 1))
    with _store(kind, dsn) as store:
        ops = [PutOp(space, e["id"], e) for e in memories(size)]
        for start in range(0, len(ops), 1000):
            store.batch(ops[start : start + 1000])
        memory: list[float] = []
        memory_cpu: list[float] = []
        agent = _agent(store, memory, memory_cpu)
        samples: dict[str, dict[str, list[float]]] = {
            k: {"turn": [], "memory": [], "turn cpu": [], "memory cpu": []}
            for k in KINDS
        }
        written = 0

        def turn() -> tuple[float, float, float, float]:
            before = len(memory)
            started, used = time.perf_counter(), time.process_time()
            agent.invoke({"messages": [("user", next(asked))]}, config)
            elapsed = time.perf_counter() - started
            spent = time.process_time() - used
            assert len(memory) == before + 1
            return elapsed, memory[-1], spent, memory_cpu[-1]

        for _ in range(WARM_UP):
            turn()
        for number in range(2 * turns):
            kind_of_turn = KINDS[number % 2]
            if kind_of_turn == "after write":
                written += 1
                key = f"new{written}"
                store.put(
                    space,
                    key,
                    {"id": key, "type": "fact", "content": sentence(rng),
                     "created": "2026-12-01T10:00:00+00:00"},
                )  # fmt: skip
            timed = dict(zip(PARTS, turn()))
            for part, seconds in timed.items():
                samples[kind_of_turn][part].append(seconds)
    return {
        k: {part: statistics.median(v) for part, v in parts.items()}
        for k, parts in samples.items()
    }


def _run_row(
    kind: str, size: int, turns: int, dsn: str | None, source: str | None
) -> dict[str, dict[str, float]]:
    """One row in a fresh process; ``source`` (a checkout: its ``poolsplit.py``
    and ``memory/``) is put first on its path, for an A/B."""
    env = dict(os.environ)
    if source is not None:
        root = os.path.abspath(source)
        paths = [os.path.join(root, "memory"), root, env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    out = subprocess.run(
        [sys.executable, __file__, "--row", kind, str(size),
         "--turns", str(turns), "--pg-dsn", dsn or ""],
        check=True, capture_output=True, text=True, env=env,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    ).stdout  # fmt: skip
    got: dict[str, dict[str, float]] = json.loads(out.strip().splitlines()[-1])
    return got


Rows = dict[int, list[dict[str, dict[str, float]]]]


def _medians(rows: Rows) -> dict[int, dict[str, dict[str, float]]]:
    """Per size, the median over its rows of each kind's each part."""
    return {
        size: {
            k: {part: statistics.median(r[k][part] for r in got) for part in got[0][k]}
            for k in KINDS
        }
        for size, got in rows.items()
    }


def _print_ratios(label: str, rows: Rows) -> None:
    """The largest size's medians over the smallest's (the issue's figure)."""
    medians = _medians(rows)
    small, large = min(medians), max(medians)
    for k in KINDS:
        a, b = medians[small][k], medians[large][k]
        print(
            f"{label:<14} {large}/{small} {k:<12} turn {b['turn'] / a['turn']:.2f}x"
            f"  memory {b['memory'] / a['memory']:.2f}x"
            f"  (CPU: turn {b['turn cpu'] / a['turn cpu']:.2f}x"
            f"  memory {b['memory cpu'] / a['memory cpu']:.2f}x)"
        )


def _print_row(label: str, size: int, got: dict[str, dict[str, float]]) -> None:
    for k in KINDS:
        part = got[k]
        print(
            f"{label:<14} {size:>6}  {k:<12} {part['turn'] * 1e3:9.2f} "
            f"{part['memory'] * 1e3:10.2f}  {part['turn cpu'] * 1e3:10.2f} "
            f"{part['memory cpu'] * 1e3:7.2f}"
        )


def _print_ab(kind: str, a_rows: Rows, b_rows: Rows) -> None:
    """B's medians over A's, per size and kind of turn."""
    a, b = _medians(a_rows), _medians(b_rows)
    for size in a:
        for k in KINDS:
            ratios = [b[size][k][part] / a[size][k][part] for part in PARTS]
            print(
                f"{kind[:12]} B/A {size:>6} {k:<12} turn {ratios[0]:.2f}"
                f"  memory {ratios[1]:.2f}  (CPU: turn {ratios[2]:.2f}"
                f"  memory {ratios[3]:.2f})"
            )


def _stores(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    known = ("PoolsplitStore", "InMemoryStore", "PostgresStore")
    asked = args.stores.split(",")
    if not set(asked) <= set(known):
        parser.error(f"--stores: a comma-separated list of {known}, got {args.stores}")
    stores = [s for s in asked if s != "PostgresStore"]
    if "PostgresStore" in asked and args.pg_dsn:
        stores.append("PostgresStore")
    elif "PostgresStore" in asked:
        print("PostgresStore: skipped (no --pg-dsn, no POOLSPLIT_PG_DSN)")
    return stores


Source = tuple[Optional[str], Optional[str]]


def _sources(parser: argparse.ArgumentParser, ab: str | None) -> list[Source]:
    """The checkouts of an A/B, each with the store it runs when named
    (``PATH=STORE``); ``(None, None)``: the installed packages."""
    if ab is None:
        return [(None, None)]
    sides = [side.partition("=") for side in ab.split(",")]
    sources: list[Source] = [(path, store or None) for path, _, store in sides]
    if len(sources) != 2 or not all(
        os.path.isfile(os.path.join(path, "poolsplit.py")) for path, _, _ in sides
    ):
        parser.error(f"--ab: two checkouts A,B (each with poolsplit.py), got {ab}")
    return sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--stores", default="PoolsplitStore,InMemoryStore,PostgresStore"
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ab", metavar="A,B")
    parser.add_argument("--row", nargs=2, metavar=("STORE", "SIZE"))
    args = parser.parse_args(argv)
    if args.row:
        got = row(args.row[0], int(args.row[1]), args.turns, args.pg_dsn)
        print(json.dumps(got))
        return 0
    sizes = [100, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    turns = 9 if args.quick else args.turns
    stores = _stores(parser, args)
    sources = _sources(parser, args.ab)
    print(f"Python {sys.version.split()[0]}, {turns} turns of each kind per row")
    print(
        f"{'store':<14} {'size':>6}  {'kind':<12} {'turn ms':>9} {'memory ms':>10}"
        "  (CPU: turn  memory)"
    )
    for kind in stores:
        labels = (
            [kind]
            if args.ab is None
            else [
                f"{(own or kind)[:12]} {side}" for (_, own), side in zip(sources, "AB")
            ]
        )
        rows: list[Rows] = [{n: [] for n in sizes} for _ in sources]
        for repeat in range(args.repeat):
            for size in sizes:
                # an A/B alternates which variant runs first at each repeat
                ats = range(len(sources))
                for at in ats if repeat % 2 == 0 else reversed(ats):
                    source, own = sources[at]
                    got = _run_row(own or kind, size, turns, args.pg_dsn, source)
                    rows[at][size].append(got)
                    _print_row(labels[at], size, got)
        for label, got_rows in zip(labels, rows):
            _print_ratios(label, got_rows)
        if args.ab:
            _print_ab(kind, rows[0], rows[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
