"""Processes and faults, on both backends: two writers, a SIGKILL mid-burst,
concurrent first starts, and (PostgreSQL) a server restart under a store.

A child process prints each id only after ``remember`` returned, so every
printed id is an acknowledged write. Loops are bounded; nothing is timed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from poolsplit_memory import StoreUnavailable, open_store

WRITER = r"""
import sys
from poolsplit_memory import open_store
url, namespace, count, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open_store(url, namespace=namespace) as store:
    print("ready", flush=True)
    for number in range(count):
        written = store.remember(f"{label} write {number}", type="fact")
        print(written.id, flush=True)
"""

STARTER = r"""
import os, sys, time
from poolsplit_memory import open_store
url, go = sys.argv[1], sys.argv[2]
print("ready", flush=True)
for _ in range(20000):  # wait for the parent's signal (bounded)
    if os.path.exists(go):
        break
    time.sleep(0.001)
with open_store(url, namespace="start") as store:
    print(store.remember(f"started {os.getpid()}").id, flush=True)
"""

HANG = 120  # seconds: a child that takes longer is stuck, not slow


def spawn(script, *args):
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def every_id(url, namespace):
    with open_store(url, namespace=namespace) as store:
        ids, cursor = [], None
        while True:
            page = store.list(limit=500, cursor=cursor)
            ids.extend(e["id"] for e in page.entries)
            if page.next_cursor is None:
                return ids
            cursor = page.next_cursor


def integrity(url):
    if url.startswith("postgres"):
        return "ok"
    conn = sqlite3.connect(url)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_two_processes_writing_one_database_lose_no_acknowledged_write(store_url):
    children = [spawn(WRITER, store_url, "shared", 150, label) for label in "ab"]
    acknowledged = []
    for child in children:
        out, err = child.communicate(timeout=HANG)
        assert child.returncode == 0, err
        lines = out.split()
        assert lines[0] == "ready"
        acknowledged.extend(lines[1:])
    assert len(acknowledged) == 300
    stored = every_id(store_url, "shared")
    assert sorted(stored) == sorted(acknowledged)
    assert integrity(store_url) == "ok"


def test_sigkill_mid_burst_keeps_every_acknowledged_write(store_url):
    child = spawn(WRITER, store_url, "burst", 100000, "k")
    acknowledged = []
    try:
        assert child.stdout.readline().strip() == "ready"
        for _ in range(40):  # kill after 40 acknowledged writes, mid-burst
            line = child.stdout.readline()
            assert line.endswith("\n"), child.stderr.read()
            acknowledged.append(line.strip())
    finally:
        child.send_signal(signal.SIGKILL)
        # through the same reader: communicate() would read the pipe itself
        # and miss the lines readline() already buffered
        rest = child.stdout.read()
        child.wait(timeout=HANG)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    # ids printed before the kill are acknowledged too; a torn last line is not
    acknowledged.extend(line for line in rest.split("\n")[:-1] if line)
    assert len(acknowledged) < 100000  # it was killed mid-burst
    assert integrity(store_url) == "ok"
    stored = set(every_id(store_url, "burst"))
    assert set(acknowledged) <= stored
    assert len(stored - set(acknowledged)) <= 1  # at most the write in flight
    with open_store(store_url, namespace="burst") as store:  # still writable
        assert store.remember("after the kill").id


def test_six_processes_starting_at_once_on_an_empty_database(store_url, tmp_path):
    go = tmp_path / "go"
    children = [spawn(STARTER, store_url, go) for _ in range(6)]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    go.touch()
    ids = []
    for child in children:
        out, err = child.communicate(timeout=HANG)
        assert child.returncode == 0, err
        ids.extend(out.split())  # "ready" was read above
    assert len(ids) == 6
    assert sorted(every_id(store_url, "start")) == sorted(ids)


def test_first_opens_racing_on_a_new_sqlite_file_all_succeed(tmp_path):
    """Switching a new file to WAL: SQLite answers "database is locked" at
    once, without its busy handler, to one of two connections switching
    together; 2 of 90 such opens failed before the switch was retried
    (15 rounds of 6). Eight rounds of six processes, each on a new file."""
    for number in range(8):
        url = str(tmp_path / f"race{number}.db")
        go = tmp_path / f"go{number}"
        children = [spawn(STARTER, url, go) for _ in range(6)]
        for child in children:
            assert child.stdout.readline().strip() == "ready"
        go.touch()
        for child in children:
            out, err = child.communicate(timeout=HANG)
            assert child.returncode == 0, err
        assert len(every_id(url, "start")) == 6


def pg_ctl(*args):
    """pg_ctl on the test server's data directory, as its owner."""
    folder = os.environ.get("POOLSPLIT_PG_DIR")
    if not folder:
        pytest.skip("POOLSPLIT_PG_DIR is not set (scripts/start-postgres.sh sets it)")
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    log = ["-l", f"{folder}/server.log"] if args[0] != "stop" else []
    command = [str(binaries[0]), "-D", f"{folder}/data", *log, *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    # no pipes: a server started here would hold them open (its log is -l)
    subprocess.run(
        command,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=HANG,
    )


@pytest.mark.restarts_postgres
def test_postgres_restart_unreachable_then_back(pg_url):
    store = open_store(pg_url, namespace="ada")
    try:
        before = store.remember("before", type="fact")
        store.recall("before")
        pg_ctl("stop", "-m", "fast", "-w")
        try:
            for call in (
                lambda: store.remember("during"),
                lambda: store.recall("before"),
                lambda: store.get(before.id),
            ):
                with pytest.raises(StoreUnavailable) as info:
                    call()
                assert str(info.value).startswith("database unreachable: ")
                assert "\n" not in str(info.value)
        finally:
            pg_ctl("restart", "-m", "fast", "-w")  # starts it with its options
        after = store.remember("after", type="fact")  # the next call succeeds
        assert set(store.recall("before after").ids()["facts"]) == {before.id, after.id}
        assert [e["content"] for e in store.list().entries] == ["before", "after"]
    finally:
        store.close()


@pytest.mark.restarts_postgres
def test_postgres_restart_between_calls_is_invisible(pg_url):
    store = open_store(pg_url, namespace="ada")
    try:
        before = store.remember("before", type="fact")
        pg_ctl("restart", "-m", "fast", "-w")
        assert store.get(before.id)["content"] == "before"  # reader reconnects
        after = store.remember("after", type="fact")  # writer reconnects
        assert {e["id"] for e in store.list().entries} == {before.id, after.id}
    finally:
        store.close()


def test_an_unreachable_postgres_at_open_is_one_line():
    pytest.importorskip("psycopg")
    with pytest.raises(StoreUnavailable) as info:
        open_store("postgresql://someone:hunter2@127.0.0.1:1/nothing")
    text = str(info.value)
    assert text.startswith(
        "database unreachable: postgresql://someone:***@127.0.0.1:1/nothing"
    )
    assert "hunter2" not in text
    assert "\n" not in text


def test_the_postgres_candidate_query_uses_both_indexes(pg_url):
    psycopg = pytest.importorskip("psycopg")
    from poolsplit import demo_pools

    with open_store(pg_url, pools=demo_pools()) as store:
        kinds = ["transcript"] * 8 + ["task", "correction"]
        lines = "".join(
            json.dumps({"id": f"r{n}", "type": kinds[n % 10], "content": f"row {n}"})
            + "\n"
            for n in range(5000)
        )
        store.import_jsonl(io.StringIO(lines))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE poolsplit_entries")
        captured = []

        def capture(tx):
            real = tx._execute
            tx._execute = lambda sql, params: (
                captured.append((sql, params)) or real(sql, params)
            )
            tx.candidates(sorted({t for p in demo_pools() for t in p.types}))

        store._backend.read(store.namespace, capture)
        sql, params = captured[-1]
        with store._backend.connection() as conn:
            plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + sql, params))
    assert "poolsplit_entries_active" in plan
    assert "poolsplit_entries_always" in plan
    assert "Seq Scan" not in plan
