"""remember with the identical-memory check, without it, and with the old check.

    python benchmarks/remember_check.py                 # SQLite, 1k/10k/100k
    python benchmarks/remember_check.py postgresql://... 1000 10000

Imports N notes into a fresh namespace, then times 40 interleaved rounds of
three remember calls: through the store's check (``_duplicate``: one probe
of the memory-digest index), with the check replaced by "no duplicate", and
with the check as it was before the digest (a LIKE over the bodies
holding the content's words, re-created here as the baseline).
Prints medians and ratios (quote them as ratios from one run; this machine
is shared and noisy). Then clears every row's digest, as a database
upgraded from 0.1.0 has none, and times the first remember (which reads
every row of the type once and writes its digest) and the next one.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import Any

import poolsplit_memory.store as store_module
from poolsplit_memory import open_store


def like_duplicate(
    tx: Any, entry: Mapping[str, Any], ignore: Iterable[str] = ()
) -> dict[str, Any] | None:
    """The check before the digest: the active rows of the type whose body
    holds the content's words in order (LIKE), then compared exactly."""
    key = store_module._memory_key(entry)
    if key is None:
        return None
    words = [json.dumps(w, ensure_ascii=False)[1:-1] for w in key[2].split()]
    escaped = ("".join("\\" + c if c in "%_\\" else c for c in w) for w in words)
    pattern = '%"content":"%' + "%".join(escaped) + '%"%'
    sql = (
        "SELECT seq, id, scope, body FROM poolsplit_entries WHERE namespace = ? "
        "AND status = 'active' AND type = ? AND body LIKE ? ESCAPE '\\'"
    )
    skip = set(ignore)
    for stored in tx._rows(sql, (tx._namespace, key[0], pattern)):
        value = store_module._parse(stored)
        if not isinstance(value, dict) or stored.id in skip:
            continue
        if store_module._memory_key(value) == key:
            return value
    return None


def clear_digests(url: str | None, where: str) -> None:
    sql = "UPDATE poolsplit_entries SET memory_hash = NULL"
    if url and url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(sql)
        return
    import sqlite3

    lite = sqlite3.connect(where)
    with lite:
        lite.execute(sql)
    lite.close()


def timed(store: Any, content: str) -> float:
    start = time.perf_counter()
    store.remember(content)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str]) -> None:
    url = argv[0] if argv and argv[0] else None  # "" or none: a SQLite file
    sizes = [int(a) for a in argv[1:]] or [1_000, 10_000, 100_000]
    real = store_module._duplicate
    checks = {"digest": real, "none": lambda *a, **k: None, "like": like_duplicate}
    header = ("entries", "digest", "none", "like", "digest/none", "like/none")
    print(" ".join(f"{h:>11}" for h in (*header, "heal first", "next")))
    for n in sizes:
        where = url or os.path.join(tempfile.mkdtemp(), "m.db")
        store = open_store(where, namespace=f"bench-{n}-{os.getpid()}")
        lines = "".join(
            json.dumps(
                {"id": f"e{i}", "type": "note", "content": f"note {i} about billing"}
            )
            + "\n"
            for i in range(n)
        )
        store.import_jsonl(io.StringIO(lines))
        times: dict[str, list[float]] = {label: [] for label in checks}
        for turn in range(40):
            for label, check in checks.items():
                store_module._duplicate = check
                times[label].append(
                    timed(store, f"turn {turn} {label}: a fresh note about billing")
                )
        store_module._duplicate = real
        median = {label: statistics.median(times[label]) for label in checks}
        clear_digests(url, where)
        heal = timed(store, "after the upgrade: a fresh note about billing")
        after = timed(store, "after the upgrade: another note about billing")
        cells = [
            f"{n}",
            *(f"{median[label]:.2f} ms" for label in checks),
            f"{median['digest'] / median['none']:.2f}x",
            f"{median['like'] / median['none']:.2f}x",
            f"{heal:.1f} ms",
            f"{after:.2f} ms",
        ]
        print(" ".join(f"{c:>11}" for c in cells))
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
