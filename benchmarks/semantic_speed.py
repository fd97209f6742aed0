"""What the semantic ranking costs against the lexical one (issue 50).

    pip install 'poolsplit-memory[semantic,postgres]'   # or the wheels
    eval "$(bash scripts/start-postgres.sh)"             # for the PostgreSQL rows
    python benchmarks/semantic_speed.py [--quick] [--sizes 1000,10000,100000]
                                        [--turns N] [--pg-dsn URL]

For each backend (SQLite; PostgreSQL with ``--pg-dsn`` or
``POOLSPLIT_PG_DSN``) and each size, one namespace is filled by
``import_jsonl`` with conversational memories (``conversation.memories``),
and every figure below is taken in this one process, the two rankings'
turns interleaved, so that each ratio is of one minute's load:

- ``import ms/entry``: ``import_jsonl`` of the whole file by a lexical and
  by a semantic store (each into a namespace of its own): the semantic
  store's returns before its entries are embedded (the catch-up does it
  after, in its own thread; the store is then closed, which stops it).
- ``embed ms/entry``: ``Store.reindex`` of the smallest size, all of it:
  the model's cost an entry, batched (the catch-up's and reindex's).
- ``warm``: a recall with nothing written since, a new message each turn
  (so the message's embedding is included: no turn hits the cache), by a
  lexical and by a semantic store over the same namespace; and the
  message's embedding alone (``Embedder.query`` of another new message,
  in the same turns), the part of the semantic recall that is the model's.
- ``after write``: a semantic recall right after one ``remember`` (the
  catch-up embeds it meanwhile), against the warm semantic recall.
- ``first after switch``: the first recall of a store opened semantic on
  a namespace that has no vector (a lexical store's), against the first
  recall of a store opened lexical on it (both read the namespace whole).

Past the smallest size the namespace's vectors are random unit vectors
written to the side table with the entries' digests (a store reads them
as its own): the model would take minutes to embed 10,000 entries, and a
recall's cost does not depend on what the vectors hold (the message is
embedded by the model every turn). Medians; nothing is asserted, and
pytest never collects this. PostgreSQL rows use a database of their own
(``poolsplit_semspeed_PID``, dropped at the end).
"""

from __future__ import annotations

import argparse
import functools
import io
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from conversation import memories, questions, sentence
from poolsplit_memory import open_store
from poolsplit_memory._semantic import MODEL, Embedder, digest

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AGE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
WARM_UP = 3
_RUNS = itertools.count(1)


def _jsonl(size: int) -> str:
    return "".join(json.dumps(entry) + "\n" for entry in memories(size))


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _recall_ms(store: Any, message: str) -> float:
    return _timed(lambda: store.recall(message, now=NOW))


def _plant(url: str, namespace: str, seed: int = 7) -> None:
    """Random unit vectors for every entry of ``namespace``, stored with the
    entries' digests, in batches (see the module docstring)."""
    import numpy

    rng = numpy.random.default_rng(seed)
    with open_store(url, namespace=namespace) as store:
        entries, cursor = [], None
        while True:
            page = store.list(limit=500, cursor=cursor)
            entries.extend(page.entries)
            cursor = page.next_cursor
            if cursor is None:
                break
        backend = store._backend
        for start in range(0, len(entries), 1000):
            chunk = entries[start : start + 1000]
            rows = rng.standard_normal((len(chunk), 384))
            rows /= numpy.linalg.norm(rows, axis=1, keepdims=True)
            batch = [
                (str(e["id"]), digest(str(e["content"])), row.astype("<f4").tobytes())
                for e, row in zip(chunk, rows)
            ]
            backend.write(namespace, lambda tx, b=batch: tx.put_vectors(MODEL, b))


def one_size(url: str, size: int, turns: int, smallest: bool) -> dict[str, float]:
    """Every figure of one backend and size (milliseconds). Every message
    is new to the process (the embedder keeps the recent ones' vectors)."""
    tag = f"run {next(_RUNS)}"
    text = _jsonl(size)
    out: dict[str, float] = {}
    with open_store(url, namespace="ada") as lexical:
        out["import lexical"] = _timed(lambda: lexical.import_jsonl(io.StringIO(text)))
    with open_store(url, namespace="imp", ranking="semantic") as semantic:
        out["import semantic"] = _timed(
            lambda: semantic.import_jsonl(io.StringIO(text))
        )
    # first recall after switching: the namespace has no vector yet
    asked = iter(questions(4 * turns + 4 * WARM_UP + 10, seed=3))
    firsts: dict[str, list[float]] = {"lexical": [], "semantic": []}
    for ranking in ("lexical", "semantic", "semantic", "lexical"):
        with open_store(url, namespace="ada", ranking=ranking) as store:
            message = f"{next(asked)} ({tag})"
            firsts[ranking].append(_recall_ms(store, message))
    out["first lexical"] = statistics.median(firsts["lexical"])
    out["first after switch"] = statistics.median(firsts["semantic"])
    if smallest:
        with open_store(url, namespace="ada", ranking="semantic") as store:
            out["embed"] = _timed(store.reindex) / size
    else:
        _plant(url, "ada")
    lexical = open_store(url, namespace="ada")
    semantic = open_store(url, namespace="ada", ranking="semantic")
    try:
        for _ in range(WARM_UP):
            lexical.recall(f"{next(asked)} ({tag})", now=NOW)
            semantic.recall(f"{next(asked)} ({tag})", now=NOW)
        warm: dict[str, list[float]] = {
            "lexical": [],
            "semantic": [],
            "after": [],
            "message": [],
        }
        embedder = Embedder.shared()
        for turn in range(turns):
            order = ("lexical", "semantic") if turn % 2 else ("semantic", "lexical")
            for ranking in order:
                store = lexical if ranking == "lexical" else semantic
                message = f"{next(asked)} ({tag} {turn})"
                warm[ranking].append(_recall_ms(store, message))
            semantic.remember(f"{sentence_of(turn)} ({turn})", type="fact", now=AGE)
            message = f"{next(asked)} ({tag} {turn})"
            warm["after"].append(_recall_ms(semantic, message))
            message = f"{next(asked)} ({tag} {turn} alone)"
            warm["message"].append(_timed(functools.partial(embedder.query, message)))
        out["warm lexical"] = statistics.median(warm["lexical"])
        out["warm semantic"] = statistics.median(warm["semantic"])
        out["after write"] = statistics.median(warm["after"])
        out["message"] = statistics.median(warm["message"])
    finally:
        semantic.close()
        lexical.close()
    return out


def sentence_of(turn: int) -> str:
    import random

    return sentence(random.Random(turn))


def _report(backend: str, size: int, got: dict[str, float]) -> list[str]:
    def ratio(a: str, b: str) -> str:
        return f"{got[a] / got[b]:.2f}" if got.get(b) else "-"

    lines = [
        f"{backend:10} {size:>7,}  import ms/entry  lexical "
        f"{got['import lexical'] / size:.3f}  semantic "
        f"{got['import semantic'] / size:.3f}  "
        f"(x{ratio('import semantic', 'import lexical')})",
        f"{backend:10} {size:>7,}  warm recall ms   lexical "
        f"{got['warm lexical']:.1f}  semantic {got['warm semantic']:.1f}  "
        f"(x{ratio('warm semantic', 'warm lexical')}; the message's embedding "
        f"alone {got['message']:.1f})",
        f"{backend:10} {size:>7,}  after a write ms semantic {got['after write']:.1f}"
        f"  (x{ratio('after write', 'warm semantic')} the warm semantic)",
        f"{backend:10} {size:>7,}  first recall ms  lexical "
        f"{got['first lexical']:.1f}  semantic after switch "
        f"{got['first after switch']:.1f}  "
        f"(x{ratio('first after switch', 'first lexical')})",
    ]
    if "embed" in got:
        lines.append(
            f"{backend:10} {size:>7,}  embed ms/entry   {got['embed']:.2f} "
            "(reindex, batched: the catch-up's cost)"
        )
    return lines


def _pg_database(dsn: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    name = f"poolsplit_semspeed_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    base = dsn.partition("?")[0].rpartition("/")[0]

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return f"{base}/{name}", drop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 entries, 5 turns")
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated")
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    args = parser.parse_args(argv)
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    turns = 5 if args.quick else args.turns
    print(
        f"python {sys.version.split()[0]} | cpus {os.cpu_count()} | "
        f"load {os.getloadavg()[0]:.1f} | turns {turns} | medians"
    )
    backends: list[tuple[str, Any]] = [("sqlite", None)]
    if args.pg_dsn:
        backends.append(("postgresql", args.pg_dsn))
    else:
        print("postgresql: skipped (no --pg-dsn or POOLSPLIT_PG_DSN)")
    for backend, dsn in backends:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="semspeed-") as tmp:
                drop: Callable[[], None] | None = None
                if dsn is None:
                    url = os.path.join(tmp, f"s{size}.db")
                else:
                    url, drop = _pg_database(dsn)
                try:
                    got = one_size(url, size, turns, size == min(sizes))
                finally:
                    if drop is not None:
                        drop()
            for line in _report(backend, size, got):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
