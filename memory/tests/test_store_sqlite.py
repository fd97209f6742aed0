"""What only the SQLite backend has: its URLs, ``:memory:``, its reader beside
the writer, and each operational failure as one StoreUnavailable line.

The full disk is made two ways: ``PRAGMA max_page_count`` on the writer (any
user), and a real 256 KiB tmpfs (root only; skipped otherwise). The read-only
file is a tmpfs remounted read-only (root only).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
from conftest import plant

from poolsplit_memory import InvalidInput, StoreUnavailable, open_store

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("url", [":memory:", "sqlite:///:memory:"])
def test_memory_store_works(url):
    with open_store(url, namespace="ada") as store:
        written = store.remember("kept in memory", type="fact", now=NOW)
        assert store.get(written.id) == written.entry
        assert store.recall("memory", now=NOW).ids()["facts"] == [written.id]
        store.recall("memory", now=NOW)
        before = store._backend.rows_read
        store.recall("memory", now=NOW)
        assert store._backend.rows_read == before
        second = store.remember("another", type="fact", now=NOW)
        assert second.id in store.recall("another", now=NOW).ids()["facts"]
        assert store.forget(written.id) is True


def test_url_forms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///relative.db") as store:
        store.remember("x", now=NOW)
    assert (tmp_path / "relative.db").exists()
    absolute = tmp_path / "abs.db"
    with open_store(f"sqlite:///{absolute}?busy_timeout=250") as store:
        assert store.url == f"sqlite:///{absolute}?busy_timeout=250"
        assert store._backend._busy_ms == 250
    assert absolute.exists()


def test_a_pathlib_path_is_a_file_path(tmp_path):
    with open_store(tmp_path / "memory.db") as store:
        assert store.remember("x", now=NOW).id
        assert store.url == str(tmp_path / "memory.db")


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite://host/x.db",
        "sqlite:///x.db?mode=ro",
        "mysql://h/db",
    ],
)
def test_bad_urls_are_invalid_input(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput) as info:
        open_store(url)
    assert info.value.field == "url"


def test_a_missing_folder_is_one_line(tmp_path):
    with pytest.raises(StoreUnavailable) as info:
        open_store(str(tmp_path / "missing" / "memory.db"))
    assert str(info.value) == f"folder does not exist: {tmp_path / 'missing'}"
    assert not (tmp_path / "missing").exists()


def test_a_folder_given_as_the_file_is_one_line(tmp_path):
    with pytest.raises(StoreUnavailable) as info:
        open_store(str(tmp_path))
    assert info.value.cause == "cannot open database file"


def test_a_file_that_is_not_a_database_is_corrupt(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreUnavailable) as info:
        open_store(str(path))
    assert info.value.cause == "database file is corrupt"
    assert "\n" not in str(info.value)
    assert path.read_bytes().startswith(b"these are my notes")  # left untouched


def test_corrupt_pages_make_reads_unavailable_not_a_crash(tmp_path):
    path = tmp_path / "memory.db"
    with open_store(str(path)) as store:
        for number in range(300):
            store.remember(f"entry {number} " * 50, now=NOW)
    data = bytearray(path.read_bytes())
    for offset in range(2 * 4096, len(data), 4096):
        data[offset : offset + 100] = b"\xff" * 100
    path.write_bytes(bytes(data))
    with pytest.raises(StoreUnavailable) as info, open_store(str(path)) as store:
        store.recall("entry", now=NOW)
    assert info.value.cause == "database file is corrupt"


def test_disk_full_by_max_page_count(tmp_path):
    with open_store(str(tmp_path / "memory.db")) as store:
        kept = store.remember("small", now=NOW)
        pages = store._backend._writer.execute("PRAGMA page_count").fetchone()[0]
        store._backend._writer.execute(f"PRAGMA max_page_count={pages}")
        with pytest.raises(StoreUnavailable) as info:
            for number in range(50):  # distinct: the same memory is stored once
                store.remember(f"{number} " + "x" * 7000, now=NOW)
        assert str(info.value).startswith("disk full: ")
        assert store.get(kept.id) is not None  # reads still work
        store._backend._writer.execute("PRAGMA max_page_count=1073741823")
        assert store.remember("fits again", now=NOW).id


def root_tmpfs(folder, size="256k"):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "disk"
    root_tmpfs(folder)
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def roomy_disk(tmp_path):
    """A 1 MiB tmpfs: since migration 6 (the history table) a new store's
    file and its first WAL no longer fit 256 KiB together, so the
    checkpoint at close failed for want of room and left the WAL behind."""
    folder = tmp_path / "disk"
    root_tmpfs(folder, "1m")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_disk_full_on_a_real_small_filesystem(small_disk):
    store = open_store(str(small_disk / "memory.db"))
    try:
        kept = store.remember("first", now=NOW)
        written = 0
        with pytest.raises(StoreUnavailable) as info:
            for number in range(200):  # 200 * 7 KB is far more than 256 KiB
                store.remember(f"{number} " + "y" * 7000, now=NOW)
                written += 1
        assert str(info.value).startswith("disk full: ")
        assert 0 < written < 200
        assert store.get(kept.id)["content"] == "first"
        assert len(store.list(limit=500).entries) == written + 1  # nothing half-written
    finally:
        store.close()


def test_a_read_only_filesystem_is_one_line(roomy_disk):
    path = roomy_disk / "memory.db"
    with open_store(str(path)) as store:
        store.remember("x", now=NOW)
    subprocess.run(["mount", "-o", "remount,ro", str(roomy_disk)], check=True)
    try:
        with pytest.raises(StoreUnavailable) as info:
            open_store(str(path))
        assert info.value.cause == "database is read-only"
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(roomy_disk)], check=True)


def hold_write_lock(path):
    """Another connection inside a write transaction (BEGIN IMMEDIATE)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute(
        "INSERT INTO poolsplit_entries (namespace, id, type, status, body) "
        "VALUES ('ada', 'pending', 'note', 'active', '{\"id\": \"pending\"}')"
    )
    return other


def test_reads_do_not_wait_for_the_write_lock_and_a_blocked_write_is_locked(tmp_path):
    path = str(tmp_path / "memory.db")
    with open_store(f"sqlite:///{path}?busy_timeout=0", namespace="ada") as store:
        written = store.remember("readable", type="fact", now=NOW)
        other = hold_write_lock(path)
        try:
            # busy_timeout=0: a read that needed the lock would fail at once
            assert store.get(written.id) is not None
            assert store.recall("readable", now=NOW).ids()["facts"] == [written.id]
            assert len(store.list().entries) == 1  # "pending" is not committed
            store.explain("readable", now=NOW)
            with pytest.raises(StoreUnavailable) as info:
                store.remember("blocked", now=NOW)
            assert str(info.value).startswith("database is locked: ")
        finally:
            other.execute("COMMIT")
            other.close()
        assert store.remember("after", now=NOW).id
        assert store.get("pending") == {"id": "pending"}


def test_a_waiting_write_does_not_block_reads_of_the_same_store(tmp_path):
    path = str(tmp_path / "memory.db")
    store = open_store(f"sqlite:///{path}?busy_timeout=60000", namespace="ada")
    written = store.remember("readable", type="fact", now=NOW)
    other = hold_write_lock(path)
    results = []
    writer = threading.Thread(
        target=lambda: results.append(store.remember("waits", type="fact", now=NOW))
    )
    writer.start()
    try:
        for _ in range(1000):  # until the writer thread holds the store's write lock
            if store._backend._write_lock.locked():
                break
            time.sleep(0.005)
        assert store._backend._write_lock.locked()
        assert store.recall("readable", now=NOW).ids()["facts"] == [written.id]
        assert store.get(written.id) is not None
        assert writer.is_alive()  # still waiting for the other connection
    finally:
        other.execute("COMMIT")
        other.close()
        writer.join()
    assert len(results) == 1
    assert store.get(results[0].id) is not None
    store.close()


def test_a_warm_recall_runs_no_query_on_the_entries(tmp_path):
    with open_store(str(tmp_path / "memory.db"), namespace="ada") as store:
        for number in range(10):
            store.remember(f"entry {number}", type="fact", now=NOW)
        statements = []
        store._backend._reader.set_trace_callback(statements.append)
        store.recall("entry", now=NOW)
        cold = [s for s in statements if "poolsplit_entries" in s]
        assert cold  # the trace sees the cold read
        statements.clear()
        store.recall("entry 3", now=NOW)
        assert [s for s in statements if "poolsplit_entries" in s] == []
        assert statements  # only the version check ran


def test_many_threads_share_one_store(tmp_path):
    store = open_store(str(tmp_path / "memory.db"), namespace="ada")
    errors, ids = [], []
    lock = threading.Lock()

    def work(number):
        try:
            for step in range(20):
                written = store.remember(
                    f"thread {number} step {step}", type="fact", now=NOW
                )
                with lock:
                    ids.append(written.id)
                store.recall(f"thread {number}", now=NOW)
                store.get(written.id)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = []
    cursor = None
    while True:
        page = store.list(limit=500, cursor=cursor)
        listed.extend(e["id"] for e in page.entries)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(listed) == sorted(ids)
    assert len(ids) == 120
    store.close()


def test_the_wal_holds_no_frames_after_forget(tmp_path):
    path = tmp_path / "memory.db"
    with open_store(str(path)) as store:
        secret = uuid.uuid4().hex
        written = store.remember(f"secret {secret}", now=NOW)
        assert store.forget(written.id)
        wal = path.with_name("memory.db-wal")
        assert not wal.exists() or wal.stat().st_size == 0
        assert secret.encode() not in path.read_bytes()


def test_the_candidate_query_uses_two_index_ranges(tmp_path):
    from poolsplit import demo_pools

    with open_store(str(tmp_path / "memory.db"), pools=demo_pools()) as store:
        captured = []

        def capture(tx):
            real = tx._execute
            tx._execute = lambda sql, params: (
                captured.append((sql, params)) or real(sql, params)
            )
            tx.candidates(sorted({t for p in demo_pools() for t in p.types}))

        store._backend.read(store.namespace, capture)
        sql, params = captured[-1]
        plan = " ".join(
            str(row[-1])
            for row in store._backend._reader.execute(
                "EXPLAIN QUERY PLAN " + sql, params
            )
        )
    assert "USING INDEX poolsplit_entries_active" in plan
    assert "USING INDEX poolsplit_entries_always" in plan
    assert "SCAN" not in plan


def test_no_public_method_lets_a_raw_sqlite_error_out(tmp_path):
    """Connections closed under the store: every public call is one
    StoreUnavailable line, never a sqlite3 exception."""
    store = open_store(str(tmp_path / "memory.db"), namespace="ada")
    written = store.remember("x", now=NOW)
    store._backend._writer.close()
    store._backend._reader.close()
    calls = [
        lambda: store.remember("y", now=NOW),
        lambda: store.recall("x", now=NOW),
        lambda: store.explain("x", now=NOW),
        lambda: store.get(written.id),
        store.list,
        lambda: store.update(written.id, content="z"),
        lambda: store.forget(written.id),
        lambda: store.export_jsonl(tmp_path / "out.jsonl"),
        lambda: store.import_jsonl(tmp_path / "out.jsonl"),
    ]
    (tmp_path / "out.jsonl").write_text('{"content": "imported"}\n')
    for call in calls:
        with pytest.raises(StoreUnavailable) as info:
            call()
        assert not isinstance(info.value.__cause__, sqlite3.Error)
        assert "\n" not in str(info.value)


def _reader_holding_the_wal(path):
    """Another connection with a read transaction open (a long report, a
    backup tool): it holds the WAL back from truncation."""
    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute("BEGIN")
    other.execute("SELECT count(*) FROM poolsplit_entries").fetchone()
    return other


@pytest.mark.parametrize("how", ["forget", "update", "supersedes"])
def test_a_scrub_held_back_by_a_reader_is_pending_then_done_by_the_next_call(
    tmp_path, how
):
    path = tmp_path / "memory.db"
    wal = path.with_name("memory.db-wal")
    secret = uuid.uuid4().hex
    with open_store(str(path)) as store:
        written = store.remember(f"secret {secret}", now=NOW)
        assert not store.scrub_pending
        other = _reader_holding_the_wal(path)
        try:
            if how == "forget":
                assert store.forget(written.id) is True
            elif how == "update":
                store.update(written.id, content="public")
                assert store.forget(written.id)  # its history holds it (issue 49)
            else:
                store.remember("public", supersedes=written.id, now=NOW)
                assert store.forget(written.id)  # the retired body holds it
            assert store.scrub_pending  # the reader held the WAL back
            assert secret.encode() in wal.read_bytes()
            store.recall("anything", now=NOW)  # tried again, still held back
            assert store.scrub_pending
        finally:
            other.execute("COMMIT")
            other.close()
        store.get("anything")  # a read, not a delete, retries the scrub
        assert not store.scrub_pending
        assert wal.stat().st_size == 0
        assert secret.encode() not in path.read_bytes()


def test_close_finishes_a_pending_scrub(tmp_path):
    path = tmp_path / "memory.db"
    wal = path.with_name("memory.db-wal")
    secret = uuid.uuid4().hex
    keeper = open_store(str(path))  # keeps the WAL file from being removed
    store = open_store(str(path))
    written = store.remember(f"secret {secret}", now=NOW)
    other = _reader_holding_the_wal(path)
    assert store.forget(written.id)
    assert store.scrub_pending
    other.execute("COMMIT")
    other.close()
    store.close()
    assert wal.stat().st_size == 0
    assert secret.encode() not in path.read_bytes()
    keeper.close()


def test_a_scrub_waits_at_most_the_busy_timeout_for_a_reader(tmp_path):
    path = tmp_path / "memory.db"
    with open_store(f"sqlite:///{path}?busy_timeout=0") as store:
        written = store.remember("secret", now=NOW)
        other = _reader_holding_the_wal(path)
        statements = []
        store._backend._writer.set_trace_callback(statements.append)
        try:
            assert store.forget(written.id)
        finally:
            other.execute("COMMIT")
            other.close()
        checkpoints = [s for s in statements if "wal_checkpoint" in s]
        assert checkpoints == ["PRAGMA wal_checkpoint(TRUNCATE)"]  # one attempt
        assert "PRAGMA busy_timeout=0" in statements


def test_an_export_that_fails_midway_keeps_the_previous_backup(tmp_path, monkeypatch):
    backup = tmp_path / "backup.jsonl"
    with open_store(str(tmp_path / "memory.db")) as store:
        store.remember("first", now=NOW)
        assert store.export_jsonl(backup) == 1
        backup.chmod(0o640)
        before = backup.read_bytes()
        store.remember("second", now=NOW)

        def disk_full(fd):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fsync", disk_full)
        with pytest.raises(StoreUnavailable) as info:
            store.export_jsonl(backup)
        assert str(info.value).startswith("cannot write export: ")
        assert "No space left" in str(info.value)
        assert backup.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == [
            "backup.jsonl"
        ]
        monkeypatch.undo()
        assert store.export_jsonl(str(backup)) == 2
        assert len(backup.read_text(encoding="utf-8").splitlines()) == 2
        assert backup.stat().st_mode & 0o777 == 0o640  # its permissions are kept


def test_an_export_onto_a_full_disk_keeps_the_previous_backup(small_disk, tmp_path):
    backup = small_disk / "backup.jsonl"
    with open_store(str(tmp_path / "memory.db")) as store:
        store.remember("small", now=NOW)
        assert store.export_jsonl(backup) == 1
        before = backup.read_bytes()
        for number in range(60):  # 60 * 7 KB: more than the 256 KiB disk holds
            store.remember(f"{number} " + "y" * 7000, now=NOW)
        with pytest.raises(StoreUnavailable) as info:
            store.export_jsonl(backup)
        assert str(info.value).startswith("cannot write export: ")
        assert backup.read_bytes() == before
        assert [p.name for p in small_disk.iterdir()] == ["backup.jsonl"]


# A body as another tool may have written it: what ``get`` and a recall read
# must be what ``json.loads`` reads (the README: "a row whose body is not a
# JSON object is skipped and named"), the entry or the same error.
BODIES = [
    '{"id": "b", "type": "fact", "content": "billing fix"}',
    '  {"id": "b", "type": "fact", "content": "billing fix"}',
    '{"id": "b", "type": "fact", "content": "billing fix"} \n\t',
    '\ufeff{"id": "b", "type": "fact", "content": "billing fix"}',
    '{"id": "b", "content": "billing fix"} {"id": "c"}',
    '{"id": "b", "content": "billing fix"}x',
    '{"id": "b", "content": "billing fix"},{"id": "c"}',
    '{"id": "b", "content": "billing fix", "base_priority": NaN}',
    '{"id": "other", "content": "billing fix", "tags": ["a", {"b": [1, 2.5]}]}',
    "4711",
    " 4711 ",
    '"billing"',
    "",
    " ",
    "[1, 2]",
]


@pytest.mark.parametrize("body", BODIES)
def test_a_hand_written_body_reads_as_json_loads_reads_it(tmp_path, body):
    path = str(tmp_path / "m.db")
    store = open_store(path, namespace="ada")
    plant(path, "ada", "b", body, type="fact")
    try:
        expected = json.loads(body)
    except ValueError as exc:
        assert store.get("b") == {"id": "b", "unreadable": f"invalid JSON: {exc}"}
        reasons = {s.id: s.reason for s in store.recall("billing", now=NOW).skipped}
        assert reasons == {"b": f"invalid JSON: {exc}"}
        return
    if isinstance(expected, dict):
        expected["id"] = "b"  # the row's id is the entry's
        same = json.dumps(store.get("b"), sort_keys=True)  # (NaN != NaN)
        assert same == json.dumps(expected, sort_keys=True)
    else:
        reasons = {s.id: s.reason for s in store.recall("billing", now=NOW).skipped}
        assert list(reasons) == ["b"]
        assert reasons["b"].startswith("must be a JSON object, got ")
