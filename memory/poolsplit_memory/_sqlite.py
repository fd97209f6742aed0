"""SQLite backend (standard library only): WAL, one writer, one reader.

A file store has two connections: the writer (``BEGIN IMMEDIATE`` per call,
``secure_delete`` on, synchronous FULL, a busy timeout for other processes'
writers) and a ``query_only`` reader, each behind its own lock, so a read
never waits for a write lock (WAL lets it read the last commit). ``:memory:``
is one connection for both (a second connection would see another database).
The warm-recall version is the reader's ``PRAGMA data_version`` (changes when
another connection, the writer included, commits) and its ``total_changes``
(changes when it commits itself: the ``:memory:`` case); when it moved, the
change log (``_sql.py``; its position is a global ``seq``, writers being
serialized by the file's lock) says which rows of the namespace changed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from poolsplit_memory._sql import ChangeLog, Counter, SqlTx, migrate
from poolsplit_memory._types import (
    DEFAULT_BUSY_MS,
    ReadTx,
    Since,
    StoreUnavailable,
    WriteTx,
)

T = TypeVar("T")

# How long the checkpoint after a delete waits for other connections' reads
# (at most the busy timeout): long enough for a short read to end, short
# enough that a long-held read does not stall the forget.
_SCRUB_WAIT_MS = 1_000
_MEMORY = ":memory:"

# Migration 1: the schema of poolsplit-memory 0.1.0.
SCHEMA_0_1_0 = (
    """CREATE TABLE IF NOT EXISTS poolsplit_entries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        scope TEXT,
        superseded_by TEXT,
        client_key TEXT,
        body TEXT NOT NULL,
        UNIQUE (namespace, id)
    )""",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_active "
    "ON poolsplit_entries (namespace, status, type)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_always "
    "ON poolsplit_entries (namespace, status, scope)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_list "
    "ON poolsplit_entries (namespace, type, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_order "
    "ON poolsplit_entries (namespace, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_superseded "
    "ON poolsplit_entries (namespace, superseded_by) WHERE superseded_by IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS poolsplit_entries_key "
    "ON poolsplit_entries (namespace, client_key) WHERE client_key IS NOT NULL",
)
# Migration 2: the change log (see _sql.py), one row per entry row changed,
# written by triggers so that a hand edit or another tool is logged too. It
# names the row by its seq, never its id: forget leaves no trace of an id.
CHANGE_LOG = (
    """CREATE TABLE poolsplit_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        entry INTEGER
    )""",
    "CREATE INDEX poolsplit_changes_namespace ON poolsplit_changes (namespace, seq)",
    """CREATE TRIGGER poolsplit_entries_inserted AFTER INSERT ON poolsplit_entries
    BEGIN
        INSERT INTO poolsplit_changes (namespace, entry)
        VALUES (NEW.namespace, NEW.seq);
    END""",
    """CREATE TRIGGER poolsplit_entries_updated AFTER UPDATE ON poolsplit_entries
    BEGIN
        INSERT INTO poolsplit_changes (namespace, entry)
        VALUES (OLD.namespace, OLD.seq);
        INSERT INTO poolsplit_changes (namespace, entry) SELECT NEW.namespace, NEW.seq
        WHERE NEW.namespace IS NOT OLD.namespace OR NEW.seq IS NOT OLD.seq;
    END""",
    """CREATE TRIGGER poolsplit_entries_deleted AFTER DELETE ON poolsplit_entries
    BEGIN
        INSERT INTO poolsplit_changes (namespace, entry)
        VALUES (OLD.namespace, OLD.seq);
    END""",
)
# Migration 3 (dedupe): the identical-memory check and list cursors, shared
# by every process on the file. ``memory_hash`` is the digest of an entry's
# memory (store.py's ``_memory_digest``), indexed so a remember finds its
# twin by one lookup; a row without it (written by hand, by another tool or
# before this migration) is NULL, found by the same index (SQLite reads
# "IS NULL" as an equality), read whole and given its digest. Any change of a
# body clears the digest (the store then writes it again): a stale digest
# would hide a twin. ``poolsplit_secrets`` holds the cursors' key.
MEMORY_HASH_AND_SECRETS = (
    "ALTER TABLE poolsplit_entries ADD COLUMN memory_hash TEXT",
    "CREATE INDEX poolsplit_entries_memory "
    "ON poolsplit_entries (namespace, type, memory_hash, status)",
    """CREATE TRIGGER poolsplit_entries_rehash AFTER UPDATE OF body ON poolsplit_entries
    WHEN NEW.body IS NOT OLD.body AND NEW.memory_hash IS NOT NULL
    BEGIN
        UPDATE poolsplit_entries SET memory_hash = NULL WHERE seq = NEW.seq;
    END""",
    "CREATE TABLE poolsplit_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
# Migration 4: the semantic ranking's vectors (_semantic.py): one per (namespace, model,
# id), with a digest of the content it was computed from.
VECTORS = (
    """CREATE TABLE poolsplit_vectors (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        model TEXT NOT NULL,
        digest TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (namespace, model, id)
    )""",
)
# Migration 5 (issue 51): who wrote each entry, the body's ``written_by``
# (stamped by the store) as a column, so that ``list(written_by=...)`` and
# ``forget(written_by=...)`` find one writer's entries by an index. Rows
# written before it are NULL: nobody is invented for them.
PROVENANCE = (
    "ALTER TABLE poolsplit_entries ADD COLUMN written_by TEXT",
    "CREATE INDEX poolsplit_entries_writer "
    "ON poolsplit_entries (namespace, written_by, seq)",
)
# Migration 6 (issue 49): every version of every entry (see _sql.py). A row
# stored before it gets its state then as version 1, operation "migrated",
# dated by the migration (history begins there: an as_of before it sees no
# row), by nobody (the body keeps its own provenance).
HISTORY = (
    """CREATE TABLE poolsplit_history (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        seq INTEGER,
        operation TEXT NOT NULL,
        body TEXT,
        changed_by TEXT,
        changed_at TEXT NOT NULL,
        PRIMARY KEY (namespace, id, version)
    )""",
    "INSERT INTO poolsplit_history (namespace, id, version, seq, operation, body, "
    "changed_by, changed_at) SELECT namespace, id, 1, seq, 'migrated', body, NULL, "
    "strftime('%Y-%m-%dT%H:%M:%f000+00:00', 'now') FROM poolsplit_entries",
)
MIGRATIONS = (
    SCHEMA_0_1_0,
    CHANGE_LOG,
    MEMORY_HASH_AND_SECRETS,
    VECTORS,
    PROVENANCE,
    HISTORY,
)
_LOG = ChangeLog(
    "SELECT max(seq) FROM poolsplit_changes",
    "SELECT DISTINCT entry, 1 AS logged FROM poolsplit_changes "
    "WHERE namespace = ? AND seq > ?",
    "DELETE FROM poolsplit_changes "
    "WHERE seq <= (SELECT max(seq) FROM poolsplit_changes) - ?",
    per_namespace=False,
)


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def unavailable(exc: BaseException, where: str) -> StoreUnavailable:
    """A SQLite error as one line naming its cause."""
    text = str(exc)
    name = getattr(exc, "sqlite_errorname", "")
    lowered = text.lower()
    if "locked" in lowered or name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        cause = "database is locked"
    elif "full" in lowered or name == "SQLITE_FULL":
        cause = "disk full"
    elif (
        "readonly" in lowered
        or "read-only" in lowered
        or name.startswith("SQLITE_READONLY")
    ):
        cause = "database is read-only"
    elif (
        "not a database" in lowered
        or "malformed" in lowered
        or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    ):
        cause = "database file is corrupt"
    elif "unable to open" in lowered or name.startswith("SQLITE_CANTOPEN"):
        cause = "cannot open database file"
    elif "closed" in lowered:
        cause = "store is closed"
    elif "i/o error" in lowered or name.startswith("SQLITE_IOERR"):
        cause = "disk I/O error"
    else:
        cause = "database error"
    return StoreUnavailable(cause, where, text)


def _open_failure(exc: BaseException, path: str) -> StoreUnavailable:
    """Why a file could not be opened: a file or folder we may not write is
    "read-only" (SQLite says only "unable to open" when it cannot create the
    WAL's files beside it)."""
    error = exc if isinstance(exc, StoreUnavailable) else unavailable(exc, path)
    folder = os.path.dirname(os.path.abspath(path))
    exists = os.path.exists(path)
    writable = os.access(path if exists else folder, os.W_OK) and os.access(
        folder, os.W_OK
    )
    if error.cause in ("cannot open database file", "database error") and not writable:
        return StoreUnavailable("database is read-only", path, str(exc))
    return error


class SQLiteBackend:
    """A SQLite file (or ``:memory:``) behind the store."""

    def __init__(self, path: str, *, busy_ms: int = DEFAULT_BUSY_MS, url: str) -> None:
        self.url = url
        self._where = path
        self._counter = Counter()
        self._busy_ms = busy_ms
        memory = path == _MEMORY
        if not memory:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise StoreUnavailable("folder does not exist", folder)
            if os.path.isdir(path):
                raise StoreUnavailable("cannot open database file", path, "a folder")
        try:
            self._writer = self._connect(path)
            try:
                self._setup(self._writer, memory)
                self._reader = self._writer if memory else self._connect(path)
                if not memory:
                    self._reader.execute("PRAGMA query_only=ON")
            except BaseException:
                self._writer.close()
                raise
        except sqlite3.Error as exc:
            raise _open_failure(exc, path) from None
        except StoreUnavailable as exc:
            raise _open_failure(exc, path) from None
        self._write_lock = threading.Lock()
        self._read_lock = self._write_lock if memory else threading.Lock()
        self._closed = False
        self._scrub_pending = False

    @property
    def rows_read(self) -> int:
        return self._counter.rows_read

    def _connect(self, path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            path,
            timeout=self._busy_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout={int(self._busy_ms)}")
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode, waiting out another process's first start.

        WAL is a property of the file, so a store opened before needs no lock
        to see it. Switching a new file takes an exclusive lock, and SQLite
        answers "database is locked" at once, without its busy handler, when
        another connection is in the middle of its own first start; so the
        switch is retried, with a short sleep, within the busy timeout.
        """
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            return
        deadline = time.monotonic() + self._busy_ms / 1000
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot use WAL (journal_mode {mode})")

    def _setup(self, conn: sqlite3.Connection, memory: bool) -> None:
        """WAL, secure_delete, FULL sync, and the missing migrations in one
        transaction (concurrent first starts: the write lock lets one apply
        them; the other then finds the version current)."""
        if not memory:
            self._use_wal(conn)
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate(
                conn.execute,
                MIGRATIONS,
                lambda name: _has_table(conn, name),
                self._where,
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("store is closed", self._where)

    def _version_of(self, conn: sqlite3.Connection) -> Callable[[], object]:
        def version() -> object:
            return (
                conn.execute("PRAGMA data_version").fetchone()[0],
                conn.total_changes,
            )

        return version

    def version(self, namespace: str) -> object:
        self._retry_scrub()
        with self._read_lock:
            self._check_open()
            try:
                return self._version_of(self._reader)()
            except sqlite3.Error as exc:
                raise unavailable(exc, self._where) from None

    def since(
        self,
        namespace: str,
        after: int | None,
        types: Sequence[str] | None,
        most: int,
    ) -> Since:
        """``ReadTx.since`` in one read transaction of the reader."""
        return self.read(namespace, lambda tx: tx.since(after, types, most))

    def signal_at(self, namespace: str, position: int) -> object | None:
        """The reader's version, read in one transaction with the change
        log's position: None unless that is still ``position`` (a commit
        since that changed entries logged a later one: AUTOINCREMENT never
        hands out a seq again, and the prune never deletes the last)."""

        def work(tx: ReadTx) -> object | None:
            signal, now = tx.position()
            return signal if now == position else None

        return self.read(namespace, work)

    def read(self, namespace: str, work: Callable[[ReadTx], T]) -> T:
        self._retry_scrub()
        with self._read_lock:
            self._check_open()
            conn = self._reader
            tx = SqlTx(
                conn.execute,
                "?",
                namespace,
                self._counter,
                self._version_of(conn),
                _LOG,
            )
            try:
                conn.execute("BEGIN")
                try:
                    return work(tx)
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise unavailable(exc, self._where) from None

    def write(self, namespace: str, work: Callable[[WriteTx], T]) -> T:
        self._retry_scrub()
        with self._write_lock:
            self._check_open()
            conn = self._writer
            tx = SqlTx(
                conn.execute,
                "?",
                namespace,
                self._counter,
                self._version_of(conn),
                _LOG,
            )
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = work(tx)
                    tx.prune()
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                if tx.scrubbed and self._where != _MEMORY:
                    self._scrub_pending = True
                    self._checkpoint(conn, min(self._busy_ms, _SCRUB_WAIT_MS))
                return result
            except sqlite3.Error as exc:
                raise unavailable(exc, self._where) from None

    @property
    def scrub_pending(self) -> bool:
        """Whether deleted or overwritten content may still be in the WAL."""
        return self._scrub_pending

    def _retry_scrub(self) -> None:
        """While a scrub is pending, try it again without waiting (skipped
        when this store's writer is busy: that write retries it itself)."""
        if not self._scrub_pending or not self._write_lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._checkpoint(self._writer, 0)
        finally:
            self._write_lock.release()

    def _checkpoint(self, conn: sqlite3.Connection, wait_ms: int) -> None:
        """Copy the WAL into the file and truncate it, so that deleted
        (secure_delete: zeroed) content leaves no old frame behind.

        One attempt, waiting at most ``wait_ms`` for other connections: a
        read transaction of another connection holds the WAL back, and
        waiting it out could take forever. When it cannot finish the scrub
        stays pending (``scrub_pending``) and is tried again, without
        waiting, at the start of every later call of this store and at close.
        """
        try:
            conn.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
            try:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                conn.execute(f"PRAGMA busy_timeout={int(self._busy_ms)}")
        except sqlite3.Error:  # the write is committed: never report it failed
            return
        if not busy:
            self._scrub_pending = False

    def scrub(self) -> None:
        """Try a pending scrub now, waiting as long as close does (a store
        on this shared backend closes; the backend stays open)."""
        with self._write_lock:
            if self._scrub_pending and not self._closed:
                self._checkpoint(self._writer, min(self._busy_ms, _SCRUB_WAIT_MS))

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            if self._scrub_pending:
                self._checkpoint(self._writer, min(self._busy_ms, _SCRUB_WAIT_MS))
            self._closed = True
            if self._reader is not self._writer:
                with self._read_lock:
                    self._reader.close()
            self._writer.close()
