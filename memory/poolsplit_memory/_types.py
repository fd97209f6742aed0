"""What the store and its backends share: errors, rows, protocols, constants.

The bottom room of the package: it imports nothing of ``poolsplit_memory``.
The backends (``_sql.py``, ``_sqlite.py``, ``_postgres.py``) build on it, and
``store.py`` on it and on them, so every import points down and none comes
back (``tests/test_imports.py`` reads the imports and says so). The public
names here (the errors) are exported by ``poolsplit_memory.store`` and the
package root, where callers import them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, Protocol, TypeVar

# ===========================================================================
# Constants
# ===========================================================================

# How long a call waits for a lock another connection holds (``?busy_timeout=MS``).
DEFAULT_BUSY_MS: Final = 10_000
# The most connections a process opens to one PostgreSQL database, shared by
# every namespace (``open_store(pool_size=)``, ``poolsplit-mcp --pool-size``).
DEFAULT_POOL_SIZE: Final = 4
# How far (in change-log positions) a snapshot may be behind and still be
# brought forward row by row; the backends keep this much of the log.
KEEP_CHANGES: Final = 20_000


# ===========================================================================
# Errors
# ===========================================================================


class StoreError(Exception):
    """Base of every error the store raises."""


class InvalidInput(StoreError, ValueError):
    """Something the caller must change; nothing was written.

    ``field`` names the argument or entry key (None when it is the call as a
    whole), ``line`` the 1-based JSONL line of an import, ``id`` the entry.
    The message is ``field: what is wrong``.
    """

    def __init__(
        self,
        field: str | None,
        message: str,
        *,
        line: int | None = None,
        id: str | None = None,
    ) -> None:
        text = message if field is None else f"{field}: {message}"
        if line is not None:
            text = f"line {line}: {text}"
        super().__init__(text)
        self.field = field
        self.message = message
        self.line = line
        self.id = id


class NotGranted(InvalidInput):
    """The writer lacks the grant a call needs (``grant``: ``"pin"`` for an
    always-scope entry or a writer's whole memory; ``"vouched"`` for an
    entry a quarantined writer did not write); nothing was written. The
    message names the grant and the writer."""

    def __init__(
        self,
        field: str | None,
        message: str,
        *,
        grant: str,
        id: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(field, message, id=id, line=line)
        self.grant = grant


class StoreUnavailable(StoreError):
    """An operational failure, in one line: ``cause: where (detail)``.

    ``cause`` is one of ``database is locked``, ``disk full``, ``database
    unreachable``, ``database is read-only``, ``database file is corrupt``,
    ``cannot open database file``, ``folder does not exist``, ``store is
    closed``, ``database error`` (and a few more named in the backends).
    """

    def __init__(self, cause: str, where: str, detail: str | None = None) -> None:
        text = f"{cause}: {where}"
        if detail:
            text += f" ({' '.join(detail.split())})"
        super().__init__(text)
        self.cause = cause
        self.where = where


# ===========================================================================
# Rows: the columns a backend writes, the row it reads back
# ===========================================================================


class Row(NamedTuple):
    """The columns of one entry as a backend writes them."""

    id: str
    type: str
    status: str  # "active" or "inactive": default_is_active, indexed
    scope: str | None
    superseded_by: str | None
    body: str
    memory_hash: str  # the memory's digest: see store._memory_digest
    written_by: str | None = None  # the body's, stamped by the store (issue 51)


ADOPTED = "adopted"  # the history's operation for a body another tool wrote


class Change(NamedTuple):
    """What a write records in the history beside each row it writes (issue
    49): the operation (``remember``, ``update``, ``supersede``, ``import``,
    ``forget``; ``adopted``, by nobody: a body another tool wrote, as the
    store first read it), who (the writer's name) and when (the store's clock, UTC,
    ISO 8601 with microseconds: the text order is the time order)."""

    operation: str
    by: str | None
    at: str


class Version(NamedTuple):
    """One version of an entry as the history holds it: ``body`` None for a
    tombstone and for every version of a forgotten entry; ``seq`` the entry
    row's position then (None for a tombstone)."""

    version: int
    operation: str
    body: str | None
    by: str | None
    at: str
    seq: int | None


class Stored(NamedTuple):
    """One stored row as a backend reads it."""

    seq: int
    id: str
    scope: str | None
    body: str


class Past(NamedTuple):
    """What :meth:`ReadTx.past` reads of a namespace for a time T: the ids
    whose row may differ from its state at T (a version after T, or a body
    the store did not write), each such id's version at T that has a body
    (``then``: its seq then, scope None), and the seqs of the rows those
    ids have now (``gone``)."""

    changed: frozenset[str]
    then: list[Stored]
    gone: list[int]


class Since(NamedTuple):
    """What changed in a namespace after a change-log position, as one
    read (or a write, at its end) sees it: the backend's version and the
    log's position now; the seqs of the rows changed since, None when the
    log cannot say (it no longer reaches back, a TRUNCATE, too many); and
    the current candidate rows of those seqs, or every candidate row when
    ``changed`` is None."""

    signal: object
    position: int
    changed: list[int] | None
    rows: list[Stored]


# ===========================================================================
# What a backend provides
# ===========================================================================

T = TypeVar("T")


class WriteTx(Protocol):
    """The statements of one write transaction in one namespace."""

    def get(self, ident: str) -> Stored | None: ...
    def by_key(self, key: str) -> Stored | None: ...
    def insert(self, row: Row, key: str | None, change: Change) -> None: ...
    def insert_many(self, rows: Sequence[Row], change: Change) -> None: ...
    def replace(self, row: Row, change: Change, *, clear_key: bool = False) -> None: ...
    def delete(self, idents: Sequence[str], change: Change) -> list[str]: ...
    def superseding(self, idents: Sequence[str]) -> list[str]: ...
    def existing(self, idents: Sequence[str]) -> set[str]: ...
    def written_by(self, writer: str) -> list[Stored]: ...
    def candidates(self, types: Sequence[str] | None) -> list[Stored]: ...
    def memories(
        self, kinds: Sequence[str], digests: Sequence[str]
    ) -> tuple[list[Stored], list[Stored]]: ...
    def set_digests(
        self, digests: Sequence[tuple[Stored, str]], change: Change
    ) -> None: ...
    def keep_secret(self, name: str, value: str) -> str: ...
    def put_vectors(
        self, model: str, rows: Sequence[tuple[str, str, bytes]]
    ) -> None: ...
    def settled(
        self, after: int, types: Sequence[str] | None, most: int
    ) -> Since | None: ...


class ReadTx(Protocol):
    """The statements of one read transaction (a consistent snapshot)."""

    def version(self) -> object: ...
    def position(self) -> tuple[object, int]: ...
    def since(
        self, after: int | None, types: Sequence[str] | None, most: int
    ) -> Since: ...
    def get(self, ident: str) -> Stored | None: ...
    def candidates(self, types: Sequence[str] | None) -> list[Stored]: ...
    def page(
        self,
        kind: str | None,
        after: int,
        limit: int,
        *,
        scope: str | None = None,
        writer: str | None = None,
    ) -> list[Stored]: ...
    def every(self) -> list[Stored]: ...
    def history(self, ident: str) -> list[Version]: ...
    def past(self, at: str) -> Past: ...
    def secret(self, name: str) -> str | None: ...
    def vectors(
        self, model: str, idents: Sequence[str]
    ) -> dict[str, tuple[str, bytes]]: ...


class Backend(Protocol):
    """A database: one write transaction or read snapshot per call.

    ``write`` and ``read`` run ``work`` in one transaction and roll it back
    when ``work`` raises; a database failure comes out as StoreUnavailable.
    ``version`` changes whenever the namespace may have changed, and reads
    no entry rows; ``since`` is ``ReadTx.since`` in one read (on
    PostgreSQL one statement when the log can say); ``signal_at`` is the
    version a recall will compare while the change log stays at
    ``position`` (None: it has moved on).
    ``rows_read`` counts the entry rows fetched (for tests).
    ``scrub_pending``: deleted content may still be in a file (SQLite's WAL);
    ``scrub`` tries again to remove it, as ``close`` does.
    """

    url: str

    @property
    def rows_read(self) -> int: ...
    @property
    def scrub_pending(self) -> bool: ...

    def write(self, namespace: str, work: Callable[[WriteTx], T]) -> T: ...
    def read(self, namespace: str, work: Callable[[ReadTx], T]) -> T: ...
    def version(self, namespace: str) -> object: ...
    def since(
        self,
        namespace: str,
        after: int | None,
        types: Sequence[str] | None,
        most: int,
    ) -> Since: ...
    def signal_at(self, namespace: str, position: int) -> object | None: ...
    def scrub(self) -> None: ...
    def close(self) -> None: ...
