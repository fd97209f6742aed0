"""What a recall as of a past time costs against a plain one (issue 49).

    pip install 'poolsplit-memory[postgres]'   # or the wheels, see README
    eval "$(bash scripts/start-postgres.sh)"    # for the PostgreSQL rows
    python benchmarks/as_of.py [--entries 10000] [--turns 7] [--pg-dsn URL] [--quick]

For each backend (SQLite in a temporary file; PostgreSQL with ``--pg-dsn``
or ``POOLSPLIT_PG_DSN``, in a database of its own, dropped at the end), one
namespace gets ``--entries`` conversational memories
(``conversation.memories``) by ``import_jsonl``, dated over the past
months, then a history on top: 1 in 20 updated, 1 in 50 superseded, 1 in
100 forgotten, each write dated a day after the import. Then, in one
process, the turns interleaved (a new message each turn, so that no cache
of a message helps either side), medians of ``--turns``:

- *warm*: a plain recall with nothing written since (the snapshot held);
- *cold*: the first recall of a store just opened on the namespace (it
  reads the namespace whole; the store is closed after it). The process's
  snapshot budget is raised to 1 GiB, so that the cold store's snapshot
  does not evict the warm one's;
- *as_of*: ``recall(message, as_of=T)``, T the moment between the import
  and the history's writes (every update, retirement and forget after T
  undone: about a tenth of the entries changed since), ranked at the
  same ``now`` as the others;
- *recent*: the same, T before the history's last tenth of writes (about
  one entry in a hundred changed since: yesterday's recall replayed);
- *built*: *as_of* again with the derived way turned off
  (``_past.DERIVE_AT_MOST`` below 0: a snapshot of T of its own, read and
  built from every candidate row): the A/B of ``_past.derived``.

Printed: each median, and as_of and recent over warm, as_of over cold
(issue 49's target: as_of at most 3 times a plain recall; state the
figure). Nothing
is asserted; pytest never collects this. ``--quick``: 1,000 entries, 3
turns.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from conversation import memories, sentence
from poolsplit_memory import _past, open_store
from poolsplit_memory.store import set_snapshot_budget

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def fill(url: str, entries: int) -> tuple[datetime, datetime]:
    """The import, then its history: updates, retirements and forgets; the
    time between the two, and a time before the history's last tenth (the
    history is dated by the clock of the writes, not by ``created``)."""
    lines = []
    for n, entry in enumerate(memories(entries)):
        entry["created"] = (NOW - timedelta(hours=n % 4000)).isoformat()
        lines.append(json.dumps(entry))
    with open_store(url, namespace="bench") as store:
        store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
        ids = [json.loads(line)["id"] for line in lines]
        time.sleep(0.01)
        between = datetime.now(timezone.utc)
        time.sleep(0.01)
        recent = between
        for n, ident in enumerate(ids):
            if n == len(ids) * 9 // 10:
                time.sleep(0.01)
                recent = datetime.now(timezone.utc)
                time.sleep(0.01)
            if n % 100 == 3:
                store.forget(ident)
            elif n % 50 == 1:
                new = store.remember(
                    f"{sentence(random.Random(n))} (as of {n})",
                    type="fact",
                    supersedes=ident,
                    now=NOW,
                )
                assert new.id
            elif n % 20 == 0:
                store.update(ident, content=f"updated {n}: {lines[n][:60]}")
    return between, recent


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def one_backend(url: str, entries: int, turns: int) -> list[str]:
    started = time.perf_counter()
    as_of, recent = fill(url, entries)
    took = time.perf_counter() - started
    names = ("warm", "cold", "as_of", "recent", "built")
    times: dict[str, list[float]] = {name: [] for name in names}
    derive = _past.DERIVE_AT_MOST
    question = iter(range(10**6))

    def message() -> str:
        return sentence(random.Random(1000 + next(question)))

    with open_store(url, namespace="bench") as warm:
        warm.recall(message(), now=NOW)  # its snapshot, held
        for _ in range(turns):
            times["warm"].append(timed(lambda: warm.recall(message(), now=NOW)))
            with open_store(url, namespace="bench") as cold:  # its own snapshot
                times["cold"].append(timed(lambda: cold.recall(message(), now=NOW)))
            times["as_of"].append(
                timed(lambda: warm.recall(message(), as_of=as_of, now=NOW))
            )
            times["recent"].append(
                timed(lambda: warm.recall(message(), as_of=recent, now=NOW))
            )
            _past.DERIVE_AT_MOST = -1.0  # the A/B: a snapshot of its own
            try:
                times["built"].append(
                    timed(lambda: warm.recall(message(), as_of=as_of, now=NOW))
                )
            finally:
                _past.DERIVE_AT_MOST = derive
    got = {name: median_ms(samples) for name, samples in times.items()}
    backend = "postgresql" if url.startswith("postgresql") else "sqlite"
    rows = [f"{backend}: {entries:,} entries and their history, filled in {took:.1f} s"]
    for name in names:
        rows.append(f"  {name:<6} recall ms  {got[name]:9.1f}")
    rows.append(
        f"  as_of / warm x{got['as_of'] / got['warm']:.1f}, "
        f"as_of / cold x{got['as_of'] / got['cold']:.2f}, "
        f"recent / warm x{got['recent'] / got['warm']:.1f}, "
        f"as_of derived / built x{got['as_of'] / got['built']:.2f}"
    )
    return rows


@contextmanager
def pg_database(dsn: str) -> Iterator[str]:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"poolsplit_asof_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=7)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--quick", action="store_true", help="small and short")
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.turns = 1000, 3
    set_snapshot_budget(1024**3)  # the warm snapshot and a cold one, both held
    print(f"as_of: medians of {args.turns} turns; Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as folder:
        for line in one_backend(os.path.join(folder, "m.db"), args.entries, args.turns):
            print(line, flush=True)
    if args.pg_dsn:
        with pg_database(args.pg_dsn) as url:
            for line in one_backend(url, args.entries, args.turns):
                print(line, flush=True)
    else:
        print("postgresql: skipped (pass --pg-dsn or set POOLSPLIT_PG_DSN)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
