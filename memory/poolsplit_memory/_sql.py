"""The SQL both backends run: one text per statement, only the placeholder differs.

Entries are rows of ``poolsplit_entries``: the namespace, the id, the indexed
columns the candidate query filters on (``type``, ``status``, ``scope``,
``superseded_by``), the client ``key`` of an idempotent remember, a ``seq``
that orders ``list`` pages, and the JSON ``body`` (text on both backends, so
an entry round-trips byte for byte; PostgreSQL's jsonb would rewrite numbers
and key order).

The history (migration 6, issue 49) is ``poolsplit_history``: one row per
version of an entry, appended by every write method below in the write's
own transaction (the namespace, the id, the version number from 1, the
entry row's ``seq`` then, the operation, the body as it was after it or
NULL, who and when). ``delete`` sets the body of every version of the ids
it deletes to NULL, files those versions under a digest of the id
(:func:`forgotten_id`: a forget leaves no trace of an id in the files, as
the change log never names one) and appends a tombstone there: forgetting
wins over history. Only ``history`` and ``past`` (``as_of``) read it; a
recall never does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from poolsplit_memory._types import (
    KEEP_CHANGES,
    Change,
    Past,
    Row,
    Since,
    Stored,
    StoreUnavailable,
    Version,
)

TABLE = "poolsplit_entries"
HISTORY = "poolsplit_history"
_VERSIONS_PER_INSERT = 100  # (id, body) pairs: 200 parameters and 6 more
_VECTORS = "poolsplit_vectors"
_CHUNK = 500  # ids per IN (...): far below SQLite's 32,766 parameters
_ROWS_PER_INSERT = 100
_ROWS_PER_MANY = 90  # rows of 10 columns to an INSERT: 900 parameters
_READ = "SELECT seq, id, scope, body FROM poolsplit_entries"
_FETCH = 512  # rows fetched at a time
_READ_DIGEST = "SELECT seq, id, scope, body, memory_hash FROM poolsplit_entries"

Execute = Callable[[str, Sequence[Any]], Any]


def forgotten_id(ident: str) -> str:
    """The id a forgotten entry's versions are filed under: a digest of its
    id (``history(id)`` computes it to find them), never the id itself."""
    digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()
    return f"forgotten:{digest[:32]}"


def candidate(
    status: str | None,
    kind: str | None,
    scope: str | None,
    kinds: frozenset[str] | None,
) -> bool:
    """Whether a row of these columns is one :meth:`SqlTx.candidates` reads
    for the types ``kinds`` (None: every type): active, and of one of them
    or always-scope (that method's SQL says the same)."""
    return status == "active" and (kinds is None or kind in kinds or scope == "always")


SCHEMA_TABLE = "poolsplit_schema"


def migrate(
    execute: Execute,
    migrations: Sequence[Sequence[str]],
    has_table: Callable[[str], bool],
    where: str,
) -> int:
    """Apply the migrations a database lacks, in the caller's transaction
    (which holds the lock that orders concurrent opens); return the version
    it had. A database without the version table is 0.1.0's (version 1)
    when it holds the entries table, else empty (version 0).

    Raises:
        StoreUnavailable: ``database is newer``: written by a later
            poolsplit-memory, whose schema this one does not know.
    """
    found = stored_version(execute, has_table)
    latest = len(migrations)
    if found > latest:
        raise StoreUnavailable(
            "database is newer",
            where,
            f"schema version {found}, this poolsplit-memory reads up to {latest}; "
            "upgrade poolsplit-memory",
        )
    for number in range(found, latest):
        for statement in migrations[number]:
            execute(statement, ())
    if found < latest:
        execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)", ()
        )
        execute(f"DELETE FROM {SCHEMA_TABLE}", ())
        execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES ({latest})", ())
    return found


def stored_version(execute: Execute, has_table: Callable[[str], bool]) -> int:
    """The schema version a database holds (see :func:`migrate`)."""
    if has_table(SCHEMA_TABLE):
        row = execute(f"SELECT max(version) FROM {SCHEMA_TABLE}", ()).fetchone()
        return 0 if row is None or row[0] is None else int(row[0])
    return 1 if has_table(TABLE) else 0


class Counter:
    """Entry rows fetched so far (the warm-recall tests read it)."""

    rows_read = 0


class ChangeLog:
    """A backend's statements over the change log (positions differ: see
    the module docstring): the position now, the distinct entries changed
    in a namespace after a position (``entry, 1 AS logged``), the prune."""

    def __init__(
        self, position: str, changed: str, prune: str, *, per_namespace: bool
    ) -> None:
        self.position = position
        self.changed = changed
        self.prune = prune
        self.per_namespace = per_namespace

    def args(self, namespace: str) -> tuple[str, ...]:
        return (namespace,) if self.per_namespace else ()

    def prune_args(self, namespace: str, keep: int) -> tuple[Any, ...]:
        return (*self.args(namespace), *self.args(namespace), keep)


class SqlTx:
    """The statements of one transaction in one namespace (read or write)."""

    def __init__(
        self,
        execute: Execute,
        mark: str,
        namespace: str,
        counter: Counter,
        version: Callable[[], object],
        log: ChangeLog,
    ) -> None:
        self._execute = execute
        self._mark = mark
        self._namespace = namespace
        self._counter = counter
        self._version = version
        self._log = log
        self.scrubbed = False  # a body was deleted or overwritten

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        if self._mark != "?":
            sql = sql.replace("?", self._mark)
        return self._execute(sql, params)

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Stored]:
        # (seq, id, scope, body) as read: seq is an INTEGER / bigint column.
        # In chunks: fetchall kept every driver row alive beside its Stored,
        # 10,000 objects more for the garbage collector to count and walk
        # in a namespace's load (14 of its 28 collections), for no speed.
        cursor = self._run(sql, params)
        rows: list[Stored] = []
        while chunk := cursor.fetchmany(_FETCH):
            rows.extend(map(Stored._make, chunk))
        self._counter.rows_read += len(rows)
        return rows

    def _marks(self, count: int) -> str:
        return ", ".join("?" for _ in range(count))

    # --- reads ---------------------------------------------------------------

    def version(self) -> object:
        return self._version()

    def position(self) -> tuple[object, int]:
        """The backend's version and the change log's position this
        transaction sees (on PostgreSQL one number: the namespace's version)."""
        row = self._run(self._log.position, self._log.args(self._namespace)).fetchone()
        position = 0 if row is None or row[0] is None else int(row[0])
        return self._signal(position), position

    def _signal(self, position: int) -> object:
        return position if self._log.per_namespace else self._version()

    def since(self, after: int | None, types: Sequence[str] | None, most: int) -> Since:
        """What changed in this namespace after change-log position
        ``after`` (see :class:`Since`): the rows changed, or (``after``
        None, or the log cannot say: it no longer reaches back, a TRUNCATE,
        more than ``most`` rows changed) every candidate row of ``types``."""
        if after is not None:
            found = self.logged(after, types, most)
            if found.changed is not None:
                return found
            signal, position = found.signal, found.position
        else:
            signal, position = self.position()
        return Since(signal, position, None, self.candidates(types))

    def settled(
        self, after: int, types: Sequence[str] | None, most: int
    ) -> Since | None:
        """In a write transaction, as its last read: the change log's
        position and the rows changed after ``after`` as they will be once
        it commits (as :meth:`since`; None when the log cannot say): the
        write holds the lock every other change of the namespace waits for
        (SQLite's file lock; PostgreSQL's row of the namespace's version,
        which every change bumps, by trigger) until its COMMIT. Its
        ``signal`` is not the version a recall compares: ask the backend's
        ``signal_at`` after the COMMIT."""
        found = self.logged(after, types, most)
        return None if found.changed is None else found

    def logged(self, after: int, types: Sequence[str] | None, most: int) -> Since:
        """The log's position and the rows (by ``seq``) of this namespace
        changed after position ``after``, and those of them that
        ``candidates(types)`` would read, in ``seq`` order; ``changed`` None
        (and no rows) when the log cannot say.

        One statement (the log's position, and the log joined to the rows
        by their primary key), filtered here by the candidates' condition:
        with it in SQL PostgreSQL read every active row by the status index
        instead. At most ``most + 1`` changed rows are read."""
        log = self._log
        sql = (
            f"SELECT ({log.position}), c.entry, c.logged, "
            "e.id, e.scope, e.body, e.status, e.type "
            f"FROM (SELECT 1 AS one) o LEFT JOIN ({log.changed} LIMIT ?) c ON 1 = 1 "
            f"LEFT JOIN {TABLE} e ON e.seq = c.entry AND e.namespace = ?"
        )
        ns = self._namespace
        params = (*log.args(ns), ns, after, most + 1, ns)
        found = list(self._run(sql, params).fetchall())
        position = 0 if not found or found[0][0] is None else int(found[0][0])
        signal = self._signal(position)
        logged = [r for r in found if r[2] is not None]
        if (
            position - after > KEEP_CHANGES
            or len(logged) > most
            or any(r[1] is None for r in logged)  # a TRUNCATE: all changed
        ):
            return Since(signal, position, None, [])
        self._counter.rows_read += sum(1 for r in logged if r[3] is not None)
        kinds = None if types is None else frozenset(types)
        rows = [
            Stored(int(r[1]), r[3], r[4], r[5])
            for r in logged
            if r[3] is not None and candidate(r[6], r[7], r[4], kinds)
        ]
        rows.sort(key=lambda row: row.seq)
        return Since(signal, position, [int(r[1]) for r in logged], rows)

    def prune(self) -> None:
        """Drop the change log's rows more than KEEP_CHANGES positions old."""
        self._run(self._log.prune, self._log.prune_args(self._namespace, KEEP_CHANGES))

    def get(self, ident: str) -> Stored | None:
        rows = self._rows(
            f"{_READ} WHERE namespace = ? AND id = ?", (self._namespace, ident)
        )
        return rows[0] if rows else None

    def by_key(self, key: str) -> Stored | None:
        rows = self._rows(
            f"{_READ} WHERE namespace = ? AND client_key = ?", (self._namespace, key)
        )
        return rows[0] if rows else None

    def candidates(self, types: Sequence[str] | None) -> list[Stored]:
        """The active rows any pool may take: of the pools' types, plus every
        active always-scope row (two index ranges; ``type IN (..) OR scope``
        made SQLite scan every active row). None: every active row. Sorted
        by ``seq`` here, not in SQL: an ORDER BY made SQLite walk the
        namespace in ``seq`` order instead of using the type index."""
        ns = self._namespace
        active = f"{_READ} WHERE namespace = ? AND status = 'active'"
        always = f"{active} AND scope = 'always'"
        if types is None:
            rows = self._rows(active, (ns,))
        elif not types:
            rows = self._rows(always, (ns,))
        else:
            marks = self._marks(len(types))
            sql = (
                f"{active} AND type IN ({marks}) UNION ALL "
                f"{always} AND type NOT IN ({marks})"
            )
            rows = self._rows(sql, (ns, *types, ns, *types))
        rows.sort(key=lambda row: row.seq)
        return rows

    def page(
        self,
        kind: str | None,
        after: int,
        limit: int,
        *,
        scope: str | None = None,
        writer: str | None = None,
    ) -> list[Stored]:
        """Rows after ``after`` in ``seq`` order: of type ``kind``, of
        ``scope`` (``"always"``; ``"context"``: every other row) and written
        by ``writer`` (the ``written_by`` column), each when given."""
        where = ["namespace = ?"]
        params: list[Any] = [self._namespace]
        if kind is not None:
            where.append("type = ?")
            params.append(kind)
        if scope == "always":
            where.append("scope = 'always'")
        elif scope is not None:
            where.append("(scope IS NULL OR scope <> 'always')")
        if writer is not None:
            where.append("written_by = ?")
            params.append(writer)
        sql = f"{_READ} WHERE {' AND '.join(where)} AND seq > ? ORDER BY seq LIMIT ?"
        return self._rows(sql, (*params, after, limit))

    def written_by(self, writer: str) -> list[Stored]:
        """Every row of this namespace whose ``written_by`` is ``writer``."""
        return self._rows(
            f"{_READ} WHERE namespace = ? AND written_by = ? ORDER BY seq",
            (self._namespace, writer),
        )

    def every(self) -> list[Stored]:
        return self._rows(
            f"{_READ} WHERE namespace = ? ORDER BY seq", (self._namespace,)
        )

    def history(self, ident: str) -> list[Version]:
        """Every version of ``ident`` in this namespace, oldest first (those
        of its forgotten lives too, filed under :func:`forgotten_id`)."""
        cursor = self._run(
            "SELECT version, operation, body, changed_by, changed_at, seq "
            f"FROM {HISTORY} WHERE namespace = ? AND id IN (?, ?) ORDER BY version",
            (self._namespace, ident, forgotten_id(ident)),
        )
        return [
            Version(
                int(r[0]), r[1], r[2], r[3], r[4], None if r[5] is None else int(r[5])
            )
            for r in cursor.fetchall()
        ]

    def past(self, at: str) -> Past:
        """What may differ in this namespace from the history's state at
        ``at`` (a time as the history writes it), in one statement: the ids
        with a version after ``at``, and those whose row has no history or
        no ``memory_hash`` (the store writes one with every body, and
        adopts a body another tool wrote when it gives it one: see
        :meth:`set_digests`; any other change of a body clears it); each
        one's last version at or before ``at`` when it has a body (a
        tombstone's, or one scrubbed by a forget since, has none), with its
        seq then; and the seqs of the rows they have now. O(the namespace's
        versions and rows) in SQL, each read by an index."""
        ns = self._namespace
        sql = (
            "WITH changed (id) AS ("
            f"SELECT id FROM {HISTORY} WHERE namespace = ? AND changed_at > ? "
            f"UNION SELECT e.id FROM {TABLE} e WHERE e.namespace = ? AND ("
            "e.memory_hash IS NULL OR NOT EXISTS (SELECT 1 FROM "
            f"{HISTORY} h WHERE h.namespace = ? AND h.id = e.id))), "
            # (CROSS JOIN: SQLite walks the changed ids, each by the key)
            "then_version (id, version) AS ("
            f"SELECT h.id, max(h.version) FROM changed c CROSS JOIN {HISTORY} h "
            "WHERE h.namespace = ? AND h.id = c.id AND h.changed_at <= ? "
            "GROUP BY h.id) "
            f"SELECT 0, h.seq, h.id, h.body FROM {HISTORY} h "
            "JOIN then_version t ON h.id = t.id AND h.version = t.version "
            "WHERE h.namespace = ? AND h.body IS NOT NULL "
            f"UNION ALL SELECT 1, e.seq, e.id, NULL FROM {TABLE} e "
            "JOIN changed c ON e.id = c.id WHERE e.namespace = ? "
            "UNION ALL SELECT 2, NULL, id, NULL FROM changed"
        )
        found = self._run(sql, (ns, at, ns, ns, ns, at, ns, ns)).fetchall()
        then = [Stored(int(r[1]), r[2], None, r[3]) for r in found if r[0] == 0]
        self._counter.rows_read += len(then)
        then.sort(key=lambda row: row.seq)
        return Past(
            frozenset(r[2] for r in found if r[0] == 2),
            then,
            sorted(int(r[1]) for r in found if r[0] == 1),
        )

    def memories(
        self, kinds: Sequence[str], digests: Sequence[str]
    ) -> tuple[list[Stored], list[Stored]]:
        """The active rows of a type in ``kinds`` whose ``memory_hash`` is one
        of ``digests``, and those without a ``memory_hash`` (written by hand,
        by another tool, or before the migration that added it; or a body
        changed since): one statement, one probe of the memory index per
        digest and one of the rows without a digest (usually none)."""
        where = (
            f"{_READ_DIGEST} WHERE namespace = ? "
            f"AND type IN ({self._marks(len(kinds))}) AND status = 'active' AND "
        )
        found: list[Any] = []
        for start in range(0, max(len(digests), 1), _CHUNK):
            chunk = list(digests[start : start + _CHUNK])
            parts: list[str] = []
            params: list[Any] = []
            if chunk:
                parts.append(f"{where}memory_hash IN ({self._marks(len(chunk))})")
                params.extend((self._namespace, *kinds, *chunk))
            if start == 0:
                parts.append(f"{where}memory_hash IS NULL")
                params.extend((self._namespace, *kinds))
            found.extend(self._run(" UNION ALL ".join(parts), params).fetchall())
        self._counter.rows_read += len(found)
        rows = [(Stored(int(r[0]), r[1], r[2], r[3]), r[4] is None) for r in found]
        return (
            [row for row, bare in rows if not bare],
            [row for row, bare in rows if bare],
        )

    def set_digests(
        self, digests: Sequence[tuple[Stored, str]], change: Change
    ) -> None:
        """Write each row's ``memory_hash``, unless its body changed since it
        was read (PostgreSQL: another transaction may have committed an edit
        in between; its digest stays NULL). A row so digested whose body is
        not its id's last version in the history (another tool wrote it, or
        changed it in place) is adopted: its body is appended as a version
        of ``change``. So a row with a digest is its id's last version,
        which :meth:`past` relies on."""
        written: list[tuple[str, str]] = []
        for start in range(0, len(digests), _ROWS_PER_INSERT):
            chunk = digests[start : start + _ROWS_PER_INSERT]
            cases = " ".join("WHEN ? THEN ?" for _ in chunk)
            sql = (
                f"UPDATE {TABLE} SET memory_hash = CASE seq {cases} END "
                f"WHERE namespace = ? AND seq IN ({self._marks(len(chunk))}) "
                f"AND body = CASE seq {cases} END RETURNING id, body"
            )
            params: list[Any] = []
            for row, digest in chunk:
                params.extend((row.seq, digest))
            params.append(self._namespace)
            params.extend(row.seq for row, _ in chunk)
            for row, _ in chunk:
                params.extend((row.seq, row.body))
            written.extend((r[0], r[1]) for r in self._run(sql, params).fetchall())
        last = self._last_bodies([ident for ident, _ in written])
        adopted = [(i, body) for i, body in written if last.get(i, None) != body]
        if adopted:
            self._record(sorted(adopted), change)

    def _last_bodies(self, idents: Sequence[str]) -> dict[str, str | None]:
        """id -> the body of its last version in the history (ids with none
        left out)."""
        found: dict[str, str | None] = {}
        for start in range(0, len(idents), _CHUNK):
            chunk = list(idents[start : start + _CHUNK])
            sql = (
                f"SELECT h.id, h.body FROM {HISTORY} h WHERE h.namespace = ? "
                f"AND h.id IN ({self._marks(len(chunk))}) AND h.version = ("
                f"SELECT max(x.version) FROM {HISTORY} x "
                "WHERE x.namespace = ? AND x.id = h.id)"
            )
            rows = self._run(sql, (self._namespace, *chunk, self._namespace))
            found.update((r[0], r[1]) for r in rows.fetchall())
        return found

    def secret(self, name: str) -> str | None:
        """The database's secret ``name`` (shared by every process), or None."""
        row = self._run(
            "SELECT value FROM poolsplit_secrets WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else str(row[0])

    def keep_secret(self, name: str, value: str) -> str:
        """Store ``value`` as secret ``name`` unless the database holds one
        already (another process may have stored it first: the first one
        stays); return the one stored."""
        self._run(
            "INSERT INTO poolsplit_secrets (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO NOTHING",
            (name, value),
        )
        kept = self.secret(name)
        assert kept is not None  # inserted, or kept by the conflicting insert
        return kept

    def existing(self, idents: Sequence[str]) -> set[str]:
        """Which of these ids this namespace holds (reads the id index only)."""
        found: set[str] = set()
        for start in range(0, len(idents), _CHUNK):
            chunk = list(idents[start : start + _CHUNK])
            sql = (
                f"SELECT id FROM {TABLE} WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})"
            )
            found.update(
                r[0] for r in self._run(sql, (self._namespace, *chunk)).fetchall()
            )
        return found

    # --- writes --------------------------------------------------------------

    def _record(
        self, versions: Sequence[tuple[str, str | None]], change: Change
    ) -> None:
        """Append a version of each (id, body) to the history: the id's next
        version number (its forgotten lives' counted too), its row's seq now,
        ``change``'s operation, who and when. A body None is a tombstone,
        filed under :func:`forgotten_id`."""
        ns = self._namespace
        for start in range(0, len(versions), _VERSIONS_PER_INSERT):
            chunk = versions[start : start + _VERSIONS_PER_INSERT]
            values = ", ".join("(?, ?, ?)" for _ in chunk)
            sql = (
                f"WITH v (id, alias, body) AS (VALUES {values}) "
                f"INSERT INTO {HISTORY} (namespace, id, version, seq, operation, "
                "body, changed_by, changed_at) "
                "SELECT ?, v.id, COALESCE((SELECT max(h.version) "
                f"FROM {HISTORY} h WHERE h.namespace = ? "
                "AND h.id IN (v.id, v.alias)), 0) + 1, "
                f"(SELECT e.seq FROM {TABLE} e WHERE e.namespace = ? AND e.id = v.id), "
                "?, v.body, ?, ? FROM v"
            )
            params: list[Any] = []
            for ident, body in chunk:
                if body is None:  # (the seq: no row of that digest)
                    params.extend((forgotten_id(ident), ident, None))
                else:
                    params.extend((ident, forgotten_id(ident), body))
            params.extend((ns, ns, ns, change.operation, change.by, change.at))
            self._run(sql, params)

    def insert(self, row: Row, key: str | None, change: Change) -> None:
        sql = (
            f"INSERT INTO {TABLE} (namespace, id, type, status, scope, "
            "superseded_by, client_key, body, memory_hash, written_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self._run(
            sql,
            (
                self._namespace,
                row.id,
                row.type,
                row.status,
                row.scope,
                row.superseded_by,
                key,
                row.body,
                row.memory_hash,
                row.written_by,
            ),
        )
        self._record([(row.id, row.body)], change)

    def insert_many(self, rows: Sequence[Row], change: Change) -> None:
        """Insert rows without keys, 90 to a statement (900 parameters: under
        SQLite's old 999 limit; on PostgreSQL one trigger run per statement)."""
        for start in range(0, len(rows), _ROWS_PER_MANY):
            chunk = rows[start : start + _ROWS_PER_MANY]
            values = ", ".join("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" for _ in chunk)
            sql = (
                f"INSERT INTO {TABLE} (namespace, id, type, status, scope, "
                "superseded_by, client_key, body, memory_hash, written_by) "
                f"VALUES {values}"
            )
            params: list[Any] = []
            for row in chunk:
                params.extend(
                    (
                        self._namespace,
                        row.id,
                        row.type,
                        row.status,
                        row.scope,
                        row.superseded_by,
                        None,
                        row.body,
                        row.memory_hash,
                        row.written_by,
                    )
                )
            self._run(sql, params)
        self._record([(row.id, row.body) for row in rows], change)

    def replace(self, row: Row, change: Change, *, clear_key: bool = False) -> None:
        """Overwrite a row, then write its ``memory_hash`` in a statement of
        its own: the database's trigger clears the digest of any body an
        UPDATE changes (a hand edit's too), so it is set after the body."""
        self.scrubbed = True
        key = ", client_key = NULL" if clear_key else ""
        sql = (
            f"UPDATE {TABLE} SET type = ?, status = ?, scope = ?, superseded_by = ?, "
            f"body = ?, written_by = ?{key} WHERE namespace = ? AND id = ?"
        )
        self._run(
            sql,
            (
                row.type,
                row.status,
                row.scope,
                row.superseded_by,
                row.body,
                row.written_by,
                self._namespace,
                row.id,
            ),
        )
        self._run(
            f"UPDATE {TABLE} SET memory_hash = ? WHERE namespace = ? AND id = ?",
            (row.memory_hash, self._namespace, row.id),
        )
        self._record([(row.id, row.body)], change)

    def delete(self, idents: Sequence[str], change: Change) -> list[str]:
        """Delete these ids of this namespace; return the ones that existed.
        Their history keeps its versions without content (every body set to
        NULL) and a tombstone of ``change`` (who forgot, when), filed under
        :func:`forgotten_id`."""
        found = self.existing(idents)
        chunk_ids = sorted(found)
        self.scrubbed = self.scrubbed or bool(chunk_ids)
        for start in range(0, len(chunk_ids), _CHUNK):
            chunk = chunk_ids[start : start + _CHUNK]
            sql = (
                f"DELETE FROM {TABLE} WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})"
            )
            self._run(sql, (self._namespace, *chunk))
            # Their semantic vectors go in the same transaction: none
            # outlives its entry.
            self._run(
                sql.replace(f"FROM {TABLE} ", f"FROM {_VECTORS} ", 1),
                (self._namespace, *chunk),
            )
            for ident in chunk:  # (few: a forget, or one writer's entries)
                self._run(
                    f"UPDATE {HISTORY} SET body = NULL, id = ? "
                    "WHERE namespace = ? AND id = ?",
                    (forgotten_id(ident), self._namespace, ident),
                )
        self._record([(ident, None) for ident in chunk_ids], change)
        return chunk_ids

    # --- the semantic ranking's vectors (the side table of migration 4) ----

    def vectors(
        self, model: str, idents: Sequence[str]
    ) -> dict[str, tuple[str, bytes]]:
        """id -> (digest, vector) of the stored vectors of ``model`` for
        those of ``idents`` that have one."""
        found: dict[str, tuple[str, bytes]] = {}
        for start in range(0, len(idents), _CHUNK):
            chunk = list(idents[start : start + _CHUNK])
            rows = self._run(
                f"SELECT id, digest, vector FROM {_VECTORS} WHERE namespace = ? "
                f"AND model = ? AND id IN ({self._marks(len(chunk))})",
                (self._namespace, model, *chunk),
            ).fetchall()
            found.update((str(r[0]), (str(r[1]), bytes(r[2]))) for r in rows)
        return found

    def put_vectors(self, model: str, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Store (id, digest, vector) rows of ``model``, replacing an id's
        older vector."""
        for ident, mark, vector in rows:
            self._run(
                f"INSERT INTO {_VECTORS} (namespace, id, model, digest, vector) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, model, id) "
                "DO UPDATE SET digest = excluded.digest, vector = excluded.vector",
                (self._namespace, ident, model, mark, vector),
            )

    def superseding(self, idents: Sequence[str]) -> list[str]:
        """The ids of entries retired in favour of any of these."""
        found: list[str] = []
        for start in range(0, len(idents), _CHUNK):
            chunk = list(idents[start : start + _CHUNK])
            sql = (
                f"SELECT id FROM {TABLE} WHERE namespace = ? "
                f"AND superseded_by IN ({self._marks(len(chunk))})"
            )
            found.extend(
                r[0] for r in self._run(sql, (self._namespace, *chunk)).fetchall()
            )
        return found
