"""PostgreSQL backend (psycopg 3): the same SQL, a version row per namespace.

One pool of autocommit connections per database and process (``pool_size``,
4 by default; store.py shares the backend between every namespace): a
``psycopg_pool.ConnectionPool``, opened on demand, each connection checked
before it is lent and a broken one replaced (a server restart): a call that
meets the outage is StoreUnavailable ``database unreachable``; a call whose statements
never reached COMMIT on a broken connection is retried once on a new one, so
the first call after the server is back succeeds. A write whose COMMIT was
sent when the connection broke is not retried (it may have landed; retry it
with the same ``key``).

Every write transaction first bumps ``poolsplit_versions`` for its namespace
(``INSERT ... ON CONFLICT DO UPDATE``): that row lock orders the namespace's
writers, and the version is what a warm recall compares (no entry row read).
Statement-level triggers bump it too for every statement that changes
``poolsplit_entries``, so a row written by hand or by another tool is seen
by the next recall of a running store, as SQLite's ``data_version`` sees it
(a TRUNCATE bumps every namespace's version).
The schema is created under a transaction-level advisory lock, so concurrent
first starts on an empty database wait for one another instead of failing.
Reads run in REPEATABLE READ READ ONLY transactions (one snapshot per call).
Each connection sets ``lock_timeout`` to the store's busy timeout
(``?busy_timeout=MS``, 10 s by default, as on SQLite) and
``statement_timeout`` to twice that, at least 10 s: a write blocked by
another transaction's row lock fails with ``database is locked`` instead of
waiting forever.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from poolsplit_memory._sql import ChangeLog, Counter, SqlTx, migrate, stored_version
from poolsplit_memory._types import (
    DEFAULT_BUSY_MS,
    DEFAULT_POOL_SIZE,
    InvalidInput,
    ReadTx,
    Since,
    StoreUnavailable,
    WriteTx,
)

# psycopg (the ``postgres`` extra) is imported by the first PostgresBackend,
# not with this module: store.py imports this module at the top, and a SQLite
# user's ``import poolsplit_memory`` should not pay for psycopg's import (it
# takes longer than the rest of the package's together).
psycopg: Any = None
psycopg_pool: Any = None


def _psycopg_installed() -> bool:
    """Import psycopg and psycopg_pool into this module on first use; False
    without the extra."""
    # one lazy import of each, read by every method
    global psycopg, psycopg_pool
    if psycopg is None or psycopg_pool is None:
        try:
            import psycopg as module
            import psycopg_pool as pool_module
        except ImportError:
            return False
        psycopg, psycopg_pool = module, pool_module
        logging.getLogger("psycopg.pool").addFilter(_not_our_failures)
    return True


_POOL_NAME = "poolsplit"  # the name of each pool this module opens


def _not_our_failures(record: logging.LogRecord) -> bool:
    """Drop psycopg_pool's log records of a connection one of this module's
    pools failed to open: the waiting call raises that failure itself, as
    one line (``poolsplit-mcp`` promises one line on stderr for a database
    it cannot open); other pools' records pass."""
    args = record.args if isinstance(record.args, tuple) else ()
    return not (args and args[0] == _POOL_NAME)


T = TypeVar("T")

_SCHEMA_LOCK = 7_317_415_006_512_345  # pg_advisory_xact_lock key of the schema
_CONNECT_TIMEOUT = 5  # seconds
# A pooled connection is replaced after this long (psycopg_pool's default,
# which LangGraph's PostgresStore keeps): a server-side leak or a changed
# setting does not live for the whole process.
_MAX_LIFETIME_S = 3600.0
# How often a call waiting for a connection looks whether the pool's last
# attempt to open one failed (then the call says why at once, rather than
# after the whole busy timeout).
_FAILED_CONNECT_POLL_S = 0.05
# --read-db: how long a read waits for the standby to replay the namespace's
# last write before it reads the primary instead, and how long a standby
# that failed is left aside. Replay on loopback takes milliseconds; a
# standby seconds behind is better skipped than waited for.
STANDBY_WAIT_S = 1.0
STANDBY_RETRY_S = 2.0

# Migration 1 (below): the schema of poolsplit-memory 0.1.0.
SCHEMA_0_1_0 = (
    """CREATE TABLE IF NOT EXISTS poolsplit_entries (
        seq bigserial PRIMARY KEY,
        namespace text NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        scope text,
        superseded_by text,
        client_key text,
        body text NOT NULL,
        UNIQUE (namespace, id)
    )""",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_active "
    "ON poolsplit_entries (namespace, status, type)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_always "
    "ON poolsplit_entries (namespace, status) WHERE scope = 'always'",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_list "
    "ON poolsplit_entries (namespace, type, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_order "
    "ON poolsplit_entries (namespace, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_superseded "
    "ON poolsplit_entries (namespace, superseded_by) WHERE superseded_by IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS poolsplit_entries_key "
    "ON poolsplit_entries (namespace, client_key) WHERE client_key IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS poolsplit_versions (
        namespace text PRIMARY KEY,
        version bigint NOT NULL
    )""",
)
# Every statement that changes entries bumps the version of each namespace it
# touched, whoever runs it (a hand edit, another tool): statement-level
# triggers over transition tables, one upsert per statement, not per row.
_BUMP_FUNCTION = """
CREATE OR REPLACE FUNCTION poolsplit_bump_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT DISTINCT namespace, 1 FROM new_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT DISTINCT namespace, 1 FROM old_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    ELSIF TG_OP = 'TRUNCATE' THEN
        UPDATE poolsplit_versions SET version = version + 1;
    ELSE
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT namespace, 1 FROM new_rows UNION SELECT namespace, 1 FROM old_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    END IF;
    RETURN NULL;
END
$$"""
_TRIGGERS = {
    "poolsplit_entries_inserted": "AFTER INSERT ON poolsplit_entries "
    "REFERENCING NEW TABLE AS new_rows",
    "poolsplit_entries_updated": "AFTER UPDATE ON poolsplit_entries "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "poolsplit_entries_deleted": "AFTER DELETE ON poolsplit_entries "
    "REFERENCING OLD TABLE AS old_rows",
    # TRUNCATE has no transition table: every namespace's version moves.
    "poolsplit_entries_truncated": "AFTER TRUNCATE ON poolsplit_entries",
}


def _create_triggers() -> tuple[str, ...]:
    return tuple(
        f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT "
        "EXECUTE FUNCTION poolsplit_bump_versions()"
        for name, when in _TRIGGERS.items()
    )


# Migration 2: the change log (see _sql.py). The same statement triggers now
# also log each changed row's id under the version their bump gave the
# namespace: the bump holds the namespace's row lock until COMMIT, so
# versions are handed out in commit order and a reader at version v has
# seen every change up to v. A row is named by its seq, never its id (forget
# leaves no trace of an id); a TRUNCATE logs NULL: reload everything.
_LOG_FUNCTION = """
CREATE OR REPLACE FUNCTION poolsplit_bump_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        WITH touched AS (SELECT DISTINCT namespace, seq FROM new_rows),
        bumped AS (
            INSERT INTO poolsplit_versions (namespace, version)
            SELECT DISTINCT namespace, 1 FROM touched
            ON CONFLICT (namespace)
            DO UPDATE SET version = poolsplit_versions.version + 1
            RETURNING namespace, version)
        INSERT INTO poolsplit_changes (namespace, version, entry)
        SELECT t.namespace, b.version, t.seq
        FROM touched t JOIN bumped b USING (namespace);
    ELSIF TG_OP = 'DELETE' THEN
        WITH touched AS (SELECT DISTINCT namespace, seq FROM old_rows),
        bumped AS (
            INSERT INTO poolsplit_versions (namespace, version)
            SELECT DISTINCT namespace, 1 FROM touched
            ON CONFLICT (namespace)
            DO UPDATE SET version = poolsplit_versions.version + 1
            RETURNING namespace, version)
        INSERT INTO poolsplit_changes (namespace, version, entry)
        SELECT t.namespace, b.version, t.seq
        FROM touched t JOIN bumped b USING (namespace);
    ELSIF TG_OP = 'TRUNCATE' THEN
        WITH bumped AS (
            UPDATE poolsplit_versions SET version = version + 1
            RETURNING namespace, version)
        INSERT INTO poolsplit_changes (namespace, version, entry)
        SELECT namespace, version, NULL FROM bumped;
    ELSE
        WITH touched AS (
            SELECT namespace, seq FROM new_rows
            UNION SELECT namespace, seq FROM old_rows),
        bumped AS (
            INSERT INTO poolsplit_versions (namespace, version)
            SELECT DISTINCT namespace, 1 FROM touched
            ON CONFLICT (namespace)
            DO UPDATE SET version = poolsplit_versions.version + 1
            RETURNING namespace, version)
        INSERT INTO poolsplit_changes (namespace, version, entry)
        SELECT t.namespace, b.version, t.seq
        FROM touched t JOIN bumped b USING (namespace);
    END IF;
    RETURN NULL;
END
$$"""

# Migration 3 (dedupe): the identical-memory check's digest and the list
# cursors' key (see _sqlite.py's MEMORY_HASH_AND_SECRETS). A row trigger
# clears the digest of any body an UPDATE changes; the store writes it again.
_CLEAR_DIGEST = """
CREATE OR REPLACE FUNCTION poolsplit_clear_memory_hash() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body IS DISTINCT FROM OLD.body THEN
        NEW.memory_hash := NULL;
    END IF;
    RETURN NEW;
END
$$"""
MIGRATIONS = (
    (*SCHEMA_0_1_0, _BUMP_FUNCTION, *_create_triggers()),
    (
        """CREATE TABLE poolsplit_changes (
            namespace text NOT NULL,
            version bigint NOT NULL,
            entry bigint
        )""",
        "CREATE INDEX poolsplit_changes_namespace "
        "ON poolsplit_changes (namespace, version)",
        _LOG_FUNCTION,
    ),
    (
        "ALTER TABLE poolsplit_entries ADD COLUMN memory_hash text",
        "CREATE INDEX poolsplit_entries_memory "
        "ON poolsplit_entries (namespace, type, memory_hash, status)",
        # the rows without a digest, usually none, by an index of their own:
        # with statistics older than a namespace's rows the planner walked
        # the whole namespace by another index for "memory_hash IS NULL"
        "CREATE INDEX poolsplit_entries_undigested "
        "ON poolsplit_entries (namespace, type) WHERE memory_hash IS NULL",
        _CLEAR_DIGEST,
        "CREATE TRIGGER poolsplit_entries_rehash BEFORE UPDATE OF body "
        "ON poolsplit_entries FOR EACH ROW "
        "EXECUTE FUNCTION poolsplit_clear_memory_hash()",
        "CREATE TABLE poolsplit_secrets (name text PRIMARY KEY, value text NOT NULL)",
    ),
    # The semantic ranking's vectors (_semantic.py): one per (namespace,
    # model, id), with a digest of the content it was computed from.
    (
        """CREATE TABLE poolsplit_vectors (
            namespace text NOT NULL,
            id text NOT NULL,
            model text NOT NULL,
            digest text NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (namespace, model, id)
        )""",
    ),
    # Issue 51: who wrote each entry (the body's ``written_by``, stamped by
    # the store), indexed for list and forget by writer; NULL before it.
    (
        "ALTER TABLE poolsplit_entries ADD COLUMN written_by text",
        "CREATE INDEX poolsplit_entries_writer "
        "ON poolsplit_entries (namespace, written_by, seq)",
    ),
    # Issue 49: every version of every entry (see _sql.py and _sqlite.py's
    # HISTORY: the same shape; a row stored before it is version 1,
    # "migrated", dated by the migration).
    (
        """CREATE TABLE poolsplit_history (
            namespace text NOT NULL,
            id text NOT NULL,
            version integer NOT NULL,
            seq bigint,
            operation text NOT NULL,
            body text,
            changed_by text,
            changed_at text NOT NULL,
            PRIMARY KEY (namespace, id, version)
        )""",
        "INSERT INTO poolsplit_history (namespace, id, version, seq, operation, "
        "body, changed_by, changed_at) SELECT namespace, id, 1, seq, 'migrated', "
        "body, NULL, to_char(now() AT TIME ZONE 'UTC', "
        '\'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"\') FROM poolsplit_entries',
    ),
)
_LOG = ChangeLog(
    "SELECT version FROM poolsplit_versions WHERE namespace = ?",
    "SELECT DISTINCT entry, 1 AS logged FROM poolsplit_changes "
    "WHERE namespace = ? AND version > ?",
    "DELETE FROM poolsplit_changes WHERE namespace = ? AND version <= "
    "(SELECT version FROM poolsplit_versions WHERE namespace = ?) - ?",
    per_namespace=True,
)
_BUMP = (
    "INSERT INTO poolsplit_versions (namespace, version) VALUES (%s, 1) "
    "ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1"
)
_VERSION = "SELECT version FROM poolsplit_versions WHERE namespace = %s"

# SQLSTATE (or its class, two characters) -> the one-line cause.
_CAUSES = {
    "53100": "disk full",
    "25006": "database is read-only",
    "55P03": "database is locked",
    "40P01": "database is locked",
    "40001": "database is locked",
    "57014": "database is locked",  # statement or lock timeout
    "XX001": "database file is corrupt",
    "XX002": "database file is corrupt",
    "42501": "permission denied",
    "08": "database unreachable",
    "57": "database unreachable",  # admin shutdown, cannot connect now
    "53": "database out of resources",
}


def mask(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:  # unreadable: keep only the scheme, never a password
        return url.split("://", 1)[0] + "://..."
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class _Pool:
    """At most ``size`` connections to one database: a
    ``psycopg_pool.ConnectionPool`` (as LangGraph's PostgresStore uses),
    opened on demand (``min_size=0``), each connection checked before it is
    lent (``check_connection``: one empty query, so a connection a server
    restart broke is replaced, never lent), replaced after
    ``_MAX_LIFETIME_S``.

    A call waits for a connection while all are lent, at most ``wait_s``
    (the busy timeout, at least 1 s; then ``database is locked``: every
    connection busy is the same fact for the caller as a lock held too
    long). A connection the pool cannot open ends the wait at once with
    its cause (``database unreachable``, a URL that cannot be read): the
    pool opens connections in its own threads, so :meth:`_connect` keeps
    the last failure for the waiting call to raise, and the pool gives up
    on it after one retry (``reconnect_timeout``: no back-off of minutes),
    so the next call tries anew.
    """

    def __init__(
        self, connect: Callable[[], Any], size: int, wait_s: float, where: str
    ) -> None:
        self.size = size
        self._wait_s = wait_s
        self._where = where
        self._failures = 0  # connections the pool failed to open, and the
        self._failure: BaseException | None = None  # last such failure
        pool = self

        class Connection(psycopg.Connection):  # type: ignore[misc]
            @classmethod
            def connect(cls, *args: Any, **kwargs: Any) -> Any:
                return pool._connect(connect)

        self._pool = psycopg_pool.ConnectionPool(
            connection_class=Connection,
            min_size=0,
            max_size=size,
            check=psycopg_pool.ConnectionPool.check_connection,
            max_lifetime=_MAX_LIFETIME_S,
            reconnect_timeout=0.001,  # one retry, then the next call tries
            name=_POOL_NAME,
            open=True,
        )

    def _connect(self, connect: Callable[[], Any]) -> Any:
        try:
            return connect()
        except BaseException as exc:
            self._failure = exc
            self._failures += 1
            raise

    @property
    def opened(self) -> int:
        """The connections open now (lent or idle)."""
        return int(self._pool.get_stats()["pool_size"])

    def acquire(self) -> Any:
        deadline = time.monotonic() + self._wait_s
        failures = self._failures
        while True:
            left = deadline - time.monotonic()
            try:
                return self._pool.getconn(
                    timeout=max(min(left, _FAILED_CONNECT_POLL_S), 0.001)
                )
            except psycopg_pool.PoolClosed:
                raise StoreUnavailable("store is closed", self._where) from None
            except psycopg_pool.PoolTimeout:
                if self._failures != failures and self._failure is not None:
                    raise self._failure from None
                if left <= _FAILED_CONNECT_POLL_S:
                    raise StoreUnavailable(
                        "database is locked",
                        self._where,
                        f"all {self.size} connections of the pool busy for "
                        f"{self._wait_s:g} s (--pool-size)",
                    ) from None

    def release(self, conn: Any) -> None:
        """Give ``conn`` back (a broken or closed one is discarded)."""
        self._pool.putconn(conn)

    def close(self) -> None:
        """Close the idle connections; a lent one closes when it comes back."""
        self._pool.close()


class PostgresBackend:
    """A PostgreSQL database behind the store: one pool of ``pool_size``
    connections, shared by every namespace (store.py shares one backend per
    database and process)."""

    def __init__(
        self,
        url: str,
        *,
        busy_ms: int = DEFAULT_BUSY_MS,
        pool_size: int = DEFAULT_POOL_SIZE,
        read_url: str | None = None,
    ) -> None:
        self.url = mask(url)
        self._dsn = url
        # PostgreSQL reads 0 as "no limit"; SQLite's 0 is "do not wait". A
        # statement's own bound is twice that, and never below the default:
        # a lock wait ends by lock_timeout first (its message says so), and
        # a short busy timeout is about lock waits, not slow statements.
        self._timeouts = (
            f"{max(busy_ms, 1)}ms",
            f"{max(2 * busy_ms, DEFAULT_BUSY_MS)}ms",
        )
        if not _psycopg_installed():
            raise StoreUnavailable(
                "psycopg is not installed",
                self.url,
                "pip install 'poolsplit-memory[postgres]'",
            )
        self._counter = Counter()
        wait_s = max(busy_ms, 1000) / 1000  # for a connection: the busy timeout
        self._pool = _Pool(lambda: self._connect(url), pool_size, wait_s, self.url)
        self._standby: _Pool | None = None
        self._standby_down_until = 0.0  # monotonic: skip the standby till then
        self.standby_reads = 0  # reads the standby served, and the primary
        self.primary_reads = 0  # served for it (behind, down): for tests
        self.standby_error: str | None = None
        if read_url is not None:
            self._standby = _Pool(
                lambda: self._connect(read_url), pool_size, wait_s, mask(read_url)
            )
        try:
            self._attempt(self._create_schema)
        except BaseException:
            self.close()  # no connection left for the garbage collector
            raise

    @property
    def rows_read(self) -> int:
        return self._counter.rows_read

    @property
    def scrub_pending(self) -> bool:
        return False  # a deleted row's old tuple is VACUUM's (see forget)

    @property
    def connections(self) -> int:
        """The connections this backend holds open now (at most its pool size)."""
        return self._pool.opened

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        state = getattr(exc, "sqlstate", None) or ""
        cause = _CAUSES.get(state) or _CAUSES.get(state[:2])
        if cause is None:
            broken = isinstance(exc, psycopg.OperationalError) and not state
            cause = "database unreachable" if broken else "database error"
        detail = (
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        )
        return StoreUnavailable(cause, self.url, detail)

    def _connect(self, dsn: str) -> Any:
        """A new autocommit connection with the store's timeouts."""
        try:
            conn = psycopg.connect(
                dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT
            )
        except psycopg.ProgrammingError as exc:  # the URL itself cannot be read
            detail = str(exc).strip().splitlines()[0]
            raise InvalidInput("url", f"cannot be read: {detail}") from None
        except psycopg.Error as exc:
            raise self._unavailable(exc) from None
        try:  # a lock wait or a statement ends as "database is locked"
            conn.execute(
                "SELECT set_config('lock_timeout', %s, false), "
                "set_config('statement_timeout', %s, false)",
                self._timeouts,
            )
        except psycopg.Error as exc:
            conn.close()
            raise self._unavailable(exc) from None
        return conn

    @contextlib.contextmanager
    def connection(self, pool: _Pool | None = None) -> Iterator[Any]:
        """A connection of the pool (the primary's unless given) for the
        block (tests and tools)."""
        pool = self._pool if pool is None else pool
        conn = pool.acquire()
        try:
            yield conn
        finally:
            pool.release(conn)

    def _attempt(
        self,
        work: Callable[[Any], T],
        *,
        commit: bool = True,
        pool: _Pool | None = None,
    ) -> T:
        """Run ``work(conn)`` (which opens its transaction) on a connection
        of the pool (the primary's unless given) and COMMIT; once more on a
        new connection when the old one turns out broken before COMMIT was
        sent. ``commit=False``: one autocommit statement."""
        for attempt in (0, 1):
            with self.connection(pool) as conn:
                committing = False
                try:
                    result = work(conn)
                    committing = True
                    if commit:
                        conn.execute("COMMIT")
                    return result
                except psycopg.Error as exc:
                    lost = conn.broken or conn.closed
                    if not lost:
                        self._rollback(conn)
                    elif attempt == 0 and not committing:
                        continue
                    raise self._unavailable(exc) from None
                except BaseException:
                    if not (conn.broken or conn.closed):
                        self._rollback(conn)
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _rollback(self, conn: Any) -> None:
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()

    def _has_table(self, conn: Any, name: str) -> bool:
        """Whether the search path shows this table, by a query of
        ``pg_class`` (its snapshot sees what a concurrent open committed
        while this one waited for the lock; ``to_regclass`` may not)."""
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = %s "
            "AND relkind IN ('r', 'p') AND pg_catalog.pg_table_is_visible(oid))",
            (name,),
        ).fetchone()
        return bool(row[0])

    def _create_schema(self, conn: Any) -> None:
        """Apply the missing migrations in one transaction. When none is
        missing no DDL and no lock is taken (a user with only read and write
        rights can open the store); else under a transaction-level advisory
        lock, so concurrent first starts wait for one another, and the
        second finds the version current."""
        conn.execute("BEGIN")

        def run(sql: str, params: Any) -> Any:
            return conn.execute(sql, params or None)

        def has_table(name: str) -> bool:
            return self._has_table(conn, name)

        if stored_version(run, has_table) == len(MIGRATIONS):
            return
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        migrate(run, MIGRATIONS, has_table, self.url)

    def version(self, namespace: str) -> object:
        def work(conn: Any) -> object:
            row = conn.execute(_VERSION, (namespace,)).fetchone()
            return 0 if row is None else int(row[0])

        return self._attempt(work, commit=False)  # one round trip

    def since(
        self,
        namespace: str,
        after: int | None,
        types: Sequence[str] | None,
        most: int,
    ) -> Since:
        """``ReadTx.since``: when the log can say what changed, one
        autocommit statement (which sees one snapshot: no BEGIN, no COMMIT,
        two round trips fewer); else (and with a standby, whose reads wait
        for the version) a read transaction (:meth:`read`)."""
        if after is not None and self._standby is None:
            found = self._attempt(
                lambda conn: self._tx(conn, namespace).logged(after, types, most),
                commit=False,
            )
            if found.changed is not None:
                return found
        return self.read(namespace, lambda tx: tx.since(after, types, most))

    def signal_at(self, namespace: str, position: int) -> object | None:
        """The namespace's version is its change log's position: no read."""
        return position

    def read(self, namespace: str, work: Callable[[ReadTx], T]) -> T:
        """``work`` in one read snapshot: on the standby (``read_url``) when
        it has replayed the namespace's version the primary has now, else on
        the primary (see :meth:`_on_standby`)."""

        def run(conn: Any) -> T:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return work(self._tx(conn, namespace))

        if self._standby is not None and time.monotonic() >= self._standby_down_until:
            found = self._on_standby(namespace, lambda c: work(self._tx(c, namespace)))
            if found is not None:
                self.standby_reads += 1
                return found[0]
            self.primary_reads += 1
        return self._attempt(run)

    def _on_standby(self, namespace: str, run: Callable[[Any], T]) -> tuple[T] | None:
        """``(run(conn),)`` in a read snapshot of the standby that holds the
        namespace's version as the primary has it now; None when the standby
        is still behind after STANDBY_WAIT_S, or fails (down, a query
        cancelled by replay): the caller reads the primary.

        Every write bumps its namespace's version in its own transaction,
        and versions only grow, so a standby snapshot at that version holds
        every write acknowledged before this read began, by any process:
        read-your-writes across instances, as on the primary. A failure
        sets the standby aside for STANDBY_RETRY_S (no connect timeout per
        read while it is down).
        """
        assert self._standby is not None
        target = self.version(namespace)
        deadline = time.monotonic() + STANDBY_WAIT_S
        pause = 0.001

        def caught_up(conn: Any) -> tuple[T] | None:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            row = conn.execute(_VERSION, (namespace,)).fetchone()  # the snapshot
            seen = 0 if row is None else int(row[0])
            return (run(conn),) if seen >= target else None  # type: ignore[operator]

        while True:
            try:
                found = self._attempt(caught_up, pool=self._standby)
            except StoreUnavailable as exc:
                self._standby_down_until = time.monotonic() + STANDBY_RETRY_S
                self.standby_error = str(exc)  # the last one, for the operator
                return None
            if found is not None or time.monotonic() + pause > deadline:
                return found
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    def write(self, namespace: str, work: Callable[[WriteTx], T]) -> T:
        def run(conn: Any) -> T:
            conn.execute("BEGIN")
            conn.execute(_BUMP, (namespace,))
            tx = self._tx(conn, namespace)
            result = work(tx)
            tx.prune()
            return result

        return self._attempt(run)

    def _tx(self, conn: Any, namespace: str) -> SqlTx:
        def version() -> object:
            row = conn.execute(_VERSION, (namespace,)).fetchone()
            return 0 if row is None else int(row[0])

        return SqlTx(conn.execute, "%s", namespace, self._counter, version, _LOG)

    def scrub(self) -> None:
        """Nothing to scrub (see ``scrub_pending``)."""

    def close(self) -> None:
        self._pool.close()
        if self._standby is not None:
            self._standby.close()
