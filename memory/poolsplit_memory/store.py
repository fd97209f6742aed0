"""The memory store: one meaning on SQLite and PostgreSQL, validated writes.

``open_store(url, namespace=...)`` returns a :class:`Store`. Every rule lives
once, in a module of one job that this one builds on: ``_defaults`` (pools,
limits), ``_validate`` (the write rule: ``build_entry``, ``check_entry``),
``_rows`` (an entry as columns and back), ``_digests`` and ``_dedupe``
(identical memories), ``_loadable`` (the read rule), ``_snapshot`` (the
loaded candidates and the Recall of them), ``_explain``, ``_cursors`` (the
list cursor), ``_urls`` (``parse_url``) and ``_results`` (what the calls
return); every public name is still importable from here. A backend
(``_sqlite.py``, ``_postgres.py``) only runs the SQL of ``_sql.py`` inside
the transactions this module asks for.

Decisions where the issue is silent:

- ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` follow
  SQLAlchemy's rule; a plain path is used as it is; ``?busy_timeout=MS`` on a
  ``sqlite:`` or ``postgresql:`` URL sets how long a write waits for a lock
  another connection holds (default 10,000 ms) before ``database is locked``
  (PostgreSQL: ``lock_timeout``; ``statement_timeout`` twice it, >= 10 s).
  ``:memory:`` is one connection (reads wait for writes; it is
  process-local anyway); a file has a reader connection beside the writer.
- Ids are 16 hex characters of a uuid4; ``created`` is ISO-8601 UTC. A naive
  ``now`` is taken as UTC.
- ``key`` (remember): the same key with the same fields (content, type,
  scope, tags, project, base_priority) returns the first call's ``Written``
  and writes nothing; other fields are ``InvalidInput(field="key")``. A key
  lives as long as its entry: after ``forget`` it may be used again; an
  import with ``replace=True`` clears the key of an entry it overwrites;
  export does not carry keys. Each writer has a key space of its own (issue
  51): one writer's key never answers, nor blocks, another's.
- ``list`` returns every entry of the namespace (retired ones included, for
  auditing) in insertion order; the cursor is the position after the page,
  masked and bound to the namespace by a secret of the database
  (``poolsplit_secrets``, drawn by the first store that needs it): it
  reveals nothing of other namespaces; another namespace's or another
  database's is refused; every process and worker on the database accepts
  it.
- Identical memories: a ``remember`` (or an ``import_jsonl`` line) whose
  content after whitespace normalisation, type and scope equal an active
  entry stored in the namespace (found by the indexed digest of
  :func:`_memory_digest`) writes nothing and returns that entry's id with an
  ``idempotent`` warning (a ``supersedes`` then retires its target in
  favour of that entry). An ``update`` that would make an active entry the
  same memory as another active one is refused (InvalidInput naming the
  other id): merging two entries silently would lose one's tags or
  priority, and keeping both injects the same rule twice.
- ``forget`` deletes the entry and every entry whose ``superseded_by`` chain
  ends at it (they never load, and usually hold what the user wants gone).
  SQLite overwrites the deleted bytes (``secure_delete``) and truncates the
  WAL; the content is gone from the files when that truncation succeeds: at
  once, unless another connection holds a read transaction open for longer
  than a second; then ``Store.scrub_pending`` is True and the store retries
  on each later call and at ``close`` (never stalling a call on it).
  ``update`` and ``supersedes`` (which overwrite a body) take the same path
  for the entries table; the body they replaced stays in the history until
  the entry is forgotten (issue 49: only ``forget`` removes content).
  PostgreSQL deletes the row (its old tuple stays in the table file until
  VACUUM).
- ``update`` and ``forget`` of a retired entry are allowed (it stays retired);
  ``update`` with no field is InvalidInput. A field given as None is left as
  it is; ``scope="context"``, ``tags=[]`` and ``project=""`` clear (a strict
  client sends null for what it does not mean to change).
- A bad stored row is recognised when it is read: invalid JSON, not an
  object, a ``type`` that is not a str, or a ``poolsplit.validate`` error.
  An always-scope row (by its column or its body) is also named in the text.
  A running store notices a hand edit on both backends: triggers log
  every changed row (``_sql.py``), and the next recall applies it.
- The row's id is the entry's id: a body whose ``id`` is missing or differs
  is read with the row's; get, update and forget take any str id a row
  holds (a hand-written ``''`` or 300-character one too), so every row a
  recall names can be forgotten; ``update`` refuses to store such an id
  (it says to forget the row and remember it again).
- ``get``/``list`` return a row whose body is not a JSON object as
  ``{"id": ..., "unreadable": reason}`` so it can be found and forgotten;
  ``export_jsonl`` refuses to write a partial backup past such a row.
- ``import_jsonl`` assigns an id to an entry without one; with
  ``replace=True`` a later line with the same id wins over an earlier one and
  over the stored entry. It returns the number of distinct ids written.
- The spill-over type warning is given when the type is close to a pool's
  type (a likely typo such as ``"corection"``); the default type ``"note"``
  does not warn on every write.
- A ``token_count`` (import_jsonl; poolsplit charges it instead of
  counting) below what the store's ``token_counter`` counts in the content
  is refused, so it never hides content from ``max_entry_tokens`` or from
  the always-scope total; ``update`` of the content drops the old
  ``token_count``.
- History (issue 49): every write appends a version per entry it writes,
  in its transaction (``SqlTx`` appends it beside the row, so no write path
  can skip it). The new entry of a ``supersedes`` is a ``remember``, the
  retired one a ``supersede``. Rows older than migration 6 are version 1
  ``migrated``, by nobody, dated by the migration (history begins there:
  ``as_of`` before it sees none of them). A body another tool wrote (or
  changed in place) is appended as ``adopted``, by nobody, when the store
  first gives it its digest (``SqlTx.set_digests``). ``forget`` empties
  every version of what it deletes and leaves a tombstone, all filed under
  a digest of the id (``_sql.forgotten_id``), so no forgotten id stays in
  the files.
  ``as_of`` reads, for each id changed since (a version after it, or a
  row the store did not write), its last version at or before it, and
  every other row as it is now (``_past.py``), filtered as the candidate
  query filters the rows (active; of the pools' types or always-scope);
  a replay equals the recall made then unless an entry stored then was
  forgotten since (an entry that did not load still weighs in its pool's
  lexical statistics).
  The semantic ranking refuses ``as_of`` (past contents have no vectors).
- Types, scopes, projects and statuses must be strings (a store filters on
  them); NUL characters, lone surrogates and non-finite numbers are refused
  (PostgreSQL cannot store the first two; JSON cannot hold the last).
- Blank (whitespace-only) tags are refused where a blank project is, in the
  arguments of ``remember`` and ``update`` (InvalidInput ``tags`` naming
  ``tags[i]``). Blank tags already stored (before this rule, by hand) or
  imported are kept as they are and load: a tag is a str a context's tag
  equals, a blank one too (a recall's tags are a context, not a write).
- ``update``'s text fields (content, type, project) refuse the string
  ``"null"``, as its list and number fields do: it is a client's null
  (leave the field) serialised, and stored it would overwrite the text.
- A bad ``now`` is InvalidInput naming ``now`` in every call that takes one
  (``_validate._require_now``).
- A store dropped without ``close`` is closed when it is garbage-collected
  (see :class:`Store`).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import os
import shutil
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import IO, Any, Final, TypeVar, Union, overload

import poolsplit
from poolsplit import (
    Pool,
    TokenCounter,
    default_is_active,
    default_token_counter,
)

from ._cursors import (
    _CURSOR_SECRET,
    _cursor,
    _cursor_position,
)
from ._dedupe import (
    _duplicate,
    _idempotent,
    _possible_supersedes,
    _stale_warnings,
    _stored_memories,
    _supersedes_warning,
)
from ._defaults import (
    _ALWAYS,
    _MAX_PAGE,
    DEFAULT_MAX_ENTRY_TOKENS,
    DEFAULT_POOLS,
    MAX_BASE_PRIORITY,
    RANKINGS,
    REMEMBER_DESCRIPTION,
    SPILL_OVER,
    default_pools,
    pool_owners,
)
from ._digests import (
    _memory_key,
    _same_request,
)
from ._explain import (
    _QUARANTINE_HEAD,
    _explain_filters,
    _explain_tail,
    _explained_parts,
    _provenance_lines,
    _relevance_lines,
)
from ._frame import not_loaded
from ._loadable import (
    Loadable,
    loadable,
)
from ._past import built, derived, derives
from ._pooled import Part, lexical
from ._postgres import PostgresBackend
from ._ranking import (
    Relevance,
    Times,
    read_times,
)
from ._results import (
    Imported,
    Page,
    Recall,
    Skipped,
    Updated,
    Written,
)
from ._rows import (
    _dumps,
    _json_kind,
    _parse,
    _readable,
    _row,
)
from ._semantic import MODEL, Embedder
from ._shared import Handle, own_backend, shared_backend, snapshots
from ._snapshot import (
    _candidate_types,
    _load,
    _most_changes,
    _recalled,
    _Snapshot,
)
from ._sqlite import SQLiteBackend
from ._trust import (
    PROVENANCE,
    QUARANTINE,
    QUARANTINED,
    UPDATED_AT,
    UPDATED_BY,
    WRITTEN_AT,
    WRITTEN_BY,
    Writer,
    default_writer_name,
    is_quarantined,
    split_quarantine,
)
from ._types import (
    DEFAULT_BUSY_MS,  # noqa: F401 (store.DEFAULT_BUSY_MS names it, as before _types)
    DEFAULT_POOL_SIZE,
    KEEP_CHANGES,  # noqa: F401 (store.KEEP_CHANGES names it, as before _types)
    Backend,
    Change,
    InvalidInput,
    NotGranted,
    Past,
    ReadTx,
    Row,  # noqa: F401 (store.Row names it, as before _types)
    Since,
    Stored,
    StoreError,
    StoreUnavailable,
    Version,
    WriteTx,
)
from ._urls import (
    _MEMORY,
    _POSTGRES_SCHEMES,
    Target,
    is_ephemeral,
    parse_url,
)
from ._validate import (
    _MAX_DEPTH,
    _context,
    _created,
    _moment,
    _new_id,
    _not_null_text,
    _require_id,
    _require_name,
    _require_now,
    _require_priority,
    _require_text,
    _scope,
    _utc_now,
    _written_tags,
    _zone,
    _zoned,
    build_entry,
    check_entry,
)
from ._vectors import VECTOR_BYTES, Catchup, Query, Space, hybrid, missing_note

__all__ = [
    "DEFAULT_MAX_ENTRY_TOKENS",
    "DEFAULT_POOLS",
    "DEFAULT_POOL_SIZE",
    "MAX_BASE_PRIORITY",
    "RANKINGS",
    "REMEMBER_DESCRIPTION",
    "SPILL_OVER",
    "Imported",
    "InvalidInput",
    "Loadable",
    "NotGranted",
    "Page",
    "Recall",
    "Skipped",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Updated",
    "Writer",
    "Written",
    "build_entry",
    "check_entry",
    "default_pools",
    "is_ephemeral",
    "loadable",
    "not_loaded",
    "open_store",
    "parse_url",
    "pool_owners",
    "set_snapshot_budget",
]

# ===========================================================================
# The store's caches
# ===========================================================================

# Snapshots kept per store: one per list of pools recalled with.
_MAX_CACHED: Final = 8
# A snapshot's estimated bytes: a fixed part per entry plus a part per byte
# of its stored JSON (the parsed dict, the ranking's statistics with every
# term's contents by length, and the recall index its second recall builds).
# Fitted to what dropping a snapshot frees after three recalls (tracemalloc;
# benchmarks/snapshot_bytes.py) at 1,000 entries of 103, 203 and 1,003 JSON
# bytes (3.8, 11.3 and 53.6 KB an entry; the estimate gives 6.4, 12.1 and
# 57.7) and of LoCoMo's turns, 222 bytes (12.0 KB; 13.2): at or above every
# row, and up to 2x over at 10,000 entries, whose terms are shared by more
# entries (3.2-36 KB). Under the retained bytes the budget would hold more
# than it says, so the line covers the costliest rows: an estimate, not an
# account.
_SNAPSHOT_BYTES_PER_BODY_BYTE: Final = 57
_SNAPSHOT_BYTES_PER_ENTRY: Final = 500
# Held while a snapshot is built from a whole read (Store._snapshot).
_WHOLE_READS: Final = threading.Lock()


# ===========================================================================
# The store
# ===========================================================================


Source = Union[str, "os.PathLike[str]", IO[str]]
T = TypeVar("T")


def _let_go(backend: Backend, owner: int) -> None:
    """Let go of a store's database handle and snapshots (its close, or its
    finalizer when it was collected unclosed)."""
    backend.close()
    snapshots.drop_owner(owner)


def _delete_chains(
    tx: WriteTx,
    idents: Sequence[str],
    change: Change,
    may: Callable[[Stored | None, Mapping[str, Any], str], None] | None = None,
) -> int:
    """Delete these entries and those whose ``superseded_by`` chain ends at
    one of them; return how many were deleted. Each leaves a tombstone of
    ``change`` in the history, and no content there. ``may`` (the writer's
    :meth:`Store._may_change`) is asked of every entry the chains reach
    before anything is deleted: a writer may not delete through a chain
    what it may not forget by its id."""
    reached: builtins.list[str] = []
    seen = set(idents)
    frontier = builtins.list(idents)
    while frontier:
        frontier = [i for i in tx.superseding(frontier) if i not in seen]
        seen.update(frontier)
        reached.extend(frontier)
    if may is not None:
        for ident in reached:
            may(*_stored_entry(tx, ident), ident)
    return len(tx.delete(idents, change)) + len(tx.delete(reached, change))


def _stored_entry(tx: WriteTx, ident: str) -> tuple[Stored | None, dict[str, Any]]:
    """The row of ``ident`` (None if none) and its entry ({} when there is
    none or its body is unreadable): what a grant check reads."""
    found = tx.get(ident)
    value = None if found is None else _parse(found)
    return found, value if isinstance(value, dict) else {}


class Store:
    """A namespace of one database: remember, recall, get, list, update,
    forget, explain, import_jsonl, export_jsonl. Safe to share between
    threads. Build it with :func:`open_store`.

    :meth:`close` it (or use it as a context manager). A store dropped
    without ``close`` lets go of its database handle (its connections with
    the process's last store on the database) and its snapshots when it is
    garbage-collected (a ``weakref.finalize``, not at interpreter exit);
    a view of :meth:`acting_as` keeps its store alive. A semantic store's
    embedding thread, while it runs, keeps the store alive until ``close``.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        namespace: str,
        pools: Sequence[Pool] | None,
        token_counter: TokenCounter,
        max_entry_tokens: int,
        ranking: str = "lexical",
        writer: Writer | None = None,
    ) -> None:
        self._backend = backend
        self.ranking = ranking
        self._embedder = Embedder.shared() if ranking == "semantic" else None
        self.namespace = namespace
        # The pools that take entries by type, and the quarantine pool
        # (issue 51: a pool named "quarantine" among ``pools`` sizes it).
        self.pools: tuple[Pool, ...] | None
        self.pools, self.quarantine_pool = split_quarantine(pools)
        # Who this store acts for: the name it stamps on what it writes,
        # and its grants (acting_as gives a store another writer).
        self.writer = Writer(default_writer_name()) if writer is None else writer
        # The store's clock: provenance stamps and the history's times (a
        # test sets it to replay a history at times of its choosing).
        self._clock: Callable[[], datetime] = _utc_now
        self._token_counter = token_counter
        self._max_entry_tokens = max_entry_tokens
        # The snapshots live in the process's budget (_shared.snapshots),
        # keyed by (this store's owner key, pools); their bytes per entry
        # are estimated when a snapshot is read whole.
        self._owner = snapshots.owner()
        # What close() lets go of, also when the store is collected unclosed
        # (50 dropped stores held 250 file descriptors). It holds no
        # reference to the store; acting_as views share it and keep the
        # store they view alive (_viewed), so the database stays open under
        # them.
        self._release = weakref.finalize(self, _let_go, backend, self._owner)
        self._release.atexit = False
        self._viewed: Store | None = None
        self._entry_bytes: dict[tuple[Pool, ...] | None, int] = {}
        self._cache_lock = threading.Lock()
        self._cursor_key: bytes | None = None  # the database's: see _cursor_secret
        # The semantic ranking's catch-up: embeds what has no vector yet,
        # in a thread of its own, batched (_vectors.py).
        self._catchup = (
            None
            if self._embedder is None
            else Catchup(
                self._embedder,
                self._cache_lock,
                self._space,
                self._read_vectors,
                self._write_vectors,
            )
        )

    @property
    def token_counter(self) -> TokenCounter:
        """The counter of ``max_entry_tokens`` and of the pools' budgets."""
        return self._token_counter

    @property
    def max_entry_tokens(self) -> int:
        """The most tokens one entry's content may have."""
        return self._max_entry_tokens

    @property
    def url(self) -> str:
        """The database URL, any password masked."""
        return self._backend.url

    @property
    def scrub_pending(self) -> bool:
        """True while content that ``forget`` deleted, or ``update`` or
        ``supersedes`` overwrote in the entries table, may still be in
        SQLite's ``-wal`` file (what they overwrote stays in the history
        until a ``forget``).

        After such a write the store truncates the WAL at once, waiting at
        most a second (the busy timeout if shorter) for other connections'
        reads. A read transaction another connection keeps open holds the
        WAL back; then this is True and every later call of this store, and
        ``close``, tries again without waiting, until one succeeds. Always
        False on PostgreSQL (see ``forget``).
        """
        return self._backend.scrub_pending

    def __repr__(self) -> str:
        return f"<Store {self.url!r} namespace={self.namespace!r}>"

    def acting_as(self, writer: Writer | str) -> Store:
        """This store acting for ``writer``: what it writes is stamped with
        the writer's name, and the writer's grants decide what it may write
        (a name alone is a writer holding ``pin``, not quarantined: a
        person's own memory). It shares the database, the snapshots and
        the lock with this store (closing either closes both); the HTTP
        server gives each request its token's writer this way.

        Raises:
            InvalidInput: ``writer`` is not a Writer or a non-blank str.
        """
        if isinstance(writer, str):
            writer = Writer(writer)
        if not isinstance(writer, Writer):
            raise InvalidInput(
                "writer", f"must be a Writer or a str, got {type(writer).__name__}"
            )
        view = copy.copy(self)
        view.writer = writer
        view._viewed = self
        return view

    # --- grants and provenance (issue 51; _trust.py) -------------------------

    def _need_pin(self, field: str, what: str, *, id: str | None = None) -> None:
        """Refuse ``what`` unless this store's writer holds ``pin``."""
        if not self.writer.pin:
            raise NotGranted(
                field,
                f"{what} needs the 'pin' grant, which writer "
                f"{self.writer.name!r} does not hold; nothing was written",
                grant="pin",
                id=id,
            )

    def _need_vouched(self, entry: Mapping[str, Any], ident: str) -> None:
        """A quarantined writer changes only quarantined entries."""
        if self.writer.quarantine and not is_quarantined(entry):
            raise NotGranted(
                "id",
                f"writer {self.writer.name!r} is quarantined: it may change only "
                f"entries written in quarantine, and {ident!r} is not; nothing "
                "was written",
                grant="vouched",
                id=ident,
            )

    def _may_forget(
        self, found: Stored | None, entry: Mapping[str, Any], ident: str
    ) -> None:
        """:meth:`_may_change` of an entry a ``forget`` reaches by a chain of
        ``superseded_by`` (nothing to ask of a writer holding every grant)."""
        if not self.writer.pin or self.writer.quarantine:
            self._may_change(found, entry, ident, "forgetting (a retired version)")

    def _may_change(
        self, found: Stored | None, entry: Mapping[str, Any], ident: str, doing: str
    ) -> None:
        """The one rule of who may change (update, retire, forget, replace)
        a stored entry: an always-scope one (by its row's scope column or its
        body) needs ``pin``; a quarantined writer changes only quarantined
        entries. ``doing`` names the change ("changing", "forgetting")."""
        scopes = (None if found is None else found.scope, entry.get("scope"))
        if _ALWAYS in scopes:
            self._need_pin("id", f"{doing} always-scope entry {ident!r}", id=ident)
        self._need_vouched(entry, ident)

    def _writers_key(self, key: str) -> str:
        """A ``remember`` key as stored: in this writer's own key space, so
        that no writer can claim another's key first (and have the other's
        retry answered with its own entry, or refused). Length-prefixed:
        no two (writer, key) pairs store the same text. A key stored by 0.2
        (no writer) is never matched again; a retry of its memory is still
        found by its content (``idempotent``)."""
        name = self.writer.name
        return f"{len(name)}:{name}:{key}"

    def _stamp_new(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Stamp a new entry as this writer's, now (any provenance it
        carried is dropped: only the store writes it)."""
        for field in PROVENANCE:
            entry.pop(field, None)
        entry[WRITTEN_BY] = self.writer.name
        entry[WRITTEN_AT] = _created(self._clock())
        if self.writer.quarantine:
            entry[QUARANTINED] = True
        return entry

    def _stamp_change(
        self, entry: dict[str, Any], *, retired: bool = False
    ) -> str | None:
        """Stamp a change of ``entry`` by this writer, now. A change of its
        fields (not a retirement) by a quarantined writer puts it in
        quarantine; by a writer holding ``pin`` takes it out ("promoted":
        vouching is the act of those who set the rules, so an agent tricked
        by a quarantined entry into editing it does not vouch for it); by
        any other writer leaves a quarantined entry there ("kept")."""
        entry[UPDATED_BY] = self.writer.name
        entry[UPDATED_AT] = _created(self._clock())
        if retired:
            return None
        if self.writer.quarantine:
            entry[QUARANTINED] = True
            return None
        if not is_quarantined(entry):
            return None
        if self.writer.pin:
            del entry[QUARANTINED]
            return "promoted"
        return "kept"

    def _change(self, operation: str) -> Change:
        """What a write of ``operation`` records in the history: this
        writer, the store's clock now (read in the write's transaction)."""
        return Change(operation, self.writer.name, self._now())

    def _now(self) -> str:
        """The store's clock now, as the history writes times."""
        return _moment(self._clock(), "now")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the database (its connections close with the last
        store of the process on it) and of the snapshots; later calls raise
        StoreUnavailable."""
        if self._catchup is not None:  # its step in progress ends first
            self._catchup.close()
        self._release()

    # --- writes ------------------------------------------------------------

    def _check(self, entry: Mapping[str, Any]) -> list[str]:
        return check_entry(
            entry,
            pools=self.pools,
            token_counter=self._token_counter,
            max_entry_tokens=self._max_entry_tokens,
        )

    def remember(
        self,
        content: str,
        *,
        type: str = "note",
        scope: str | None = None,
        tags: Iterable[str] = (),
        project: str | None = None,
        base_priority: float | None = None,
        supersedes: str | None = None,
        key: str | None = None,
        now: datetime | None = None,
    ) -> Written:
        """Store a new entry (one transaction); return its id and warnings.

        ``supersedes=ID`` retires the active entry ID of this namespace in
        the same transaction (``superseded_by`` set to the new id). ``key``
        makes a retried call idempotent (see the module docstring).

        Raises:
            InvalidInput: a bad argument (named), ``supersedes`` not an
                active entry here, or ``key`` already used for other fields.
            StoreUnavailable: the database failed (nothing was written).
        """
        entry = build_entry(
            content,
            type=type,
            scope=scope,
            tags=tags,
            project=project,
            base_priority=base_priority,
            now=now,
        )
        self._stamp_new(entry)
        warnings = self._check(entry)
        if supersedes is not None:
            _require_name("supersedes", supersedes)
        if key is not None:
            _require_name("key", key)
        if entry.get("scope") == _ALWAYS:
            self._need_pin("scope", "an always-scope entry (it loads on every recall)")

        def work(tx: WriteTx) -> Written:
            if key is not None:
                first = tx.by_key(self._writers_key(key))
                if first is not None:
                    return self._replay(first, entry, key)
            same = _duplicate(
                tx, entry, self._now(), vouched=not self.writer.quarantine
            )
            if same is not None:
                return self._existing(tx, same, supersedes, warnings)
            if tx.get(entry["id"]) is not None:
                raise InvalidInput("id", f"{entry['id']!r} is already stored")
            if supersedes is not None:
                retired = self._retire(tx, supersedes, entry["id"])
                tx.replace(_row(retired), self._change("supersede"))
            tx.insert(
                _row(entry),
                None if key is None else self._writers_key(key),
                self._change("remember"),
            )
            if entry.get("scope") == _ALWAYS:
                warnings.extend(self._always_warnings(tx))
            return Written(entry["id"], warnings, entry)

        written = self._write(work)
        self._after_write()
        return self._suggest(written, entry, supersedes)

    def _suggest(
        self, written: Written, entry: Mapping[str, Any], supersedes: str | None
    ) -> Written:
        """``written`` with the ids the rule pairs with a new ``entry``
        (``_stale.py``) and their warning, but ``supersedes`` (retired by
        the write). Read from the snapshot the store's last recall left,
        only while it is current (the write carried itself into it) and
        free: a remember never reads the namespace (a whole read, for a
        one-off script) and never waits for a recall that
        holds the snapshot. Otherwise (no recall yet, another writer since,
        a recall busy with it) it names none, and a recall that loads both
        versions warns of the pair. The write has committed: a failure here
        is never its error, and finds nothing."""
        if written.entry is not entry:  # a twin's id or a retry: nothing new
            return written
        if not self._cache_lock.acquire(blocking=False):
            return written
        try:
            snap = snapshots.get((self._owner, self.pools))
            if snap is None or snap.signal != self._backend.version(self.namespace):
                return written
            found = _possible_supersedes(snap, entry)
        except StoreUnavailable:
            return written
        finally:
            self._cache_lock.release()
        found = [ident for ident in found if ident != supersedes]
        if not found:
            return written
        warnings = [*written.warnings, _supersedes_warning(found)]
        return Written(written.id, warnings, written.entry, found)

    def _always_warnings(self, tx: WriteTx) -> builtins.list[str]:
        """The always-scope total warning, if this namespace passes it with
        this write: read in the write's own transaction, so no read after
        the commit can fail a call whose write landed."""
        snap = _load(None, tx.candidates([]), self.pools)
        return [w for w in snap.warnings if w.startswith("scope: ")]

    def _existing(
        self,
        tx: WriteTx,
        same: dict[str, Any],
        supersedes: str | None,
        warnings: builtins.list[str],
    ) -> Written:
        """A remember of a memory already stored: the stored entry's id, an
        ``idempotent`` warning, and ``supersedes`` (if another entry) retired
        in favour of the stored one."""
        if supersedes is not None and supersedes != same["id"]:
            retired = self._retire(tx, supersedes, same["id"])
            tx.replace(_row(retired), self._change("supersede"))
        return Written(same["id"], [*warnings, _idempotent(same["id"])], same)

    def _replay(self, first: Stored, entry: dict[str, Any], key: str) -> Written:
        stored = _parse(first)
        if not isinstance(stored, dict) or not _same_request(stored, entry):
            raise InvalidInput(
                "key",
                f"{key!r} was already used for entry {first.id!r} with other "
                "fields; a retry must repeat the same call, a new write needs "
                "a new key",
            )
        return Written(first.id, self._check(stored), stored)

    def _retire(self, tx: WriteTx, ident: str, by: str) -> dict[str, Any]:
        found = tx.get(ident)
        old = None if found is None else _parse(found)
        if not isinstance(old, dict) or not default_is_active(old):
            state = "no entry" if found is None else "no active entry"
            raise InvalidInput(
                "supersedes",
                f"{state} {ident!r} in namespace {self.namespace!r}",
            )
        self._may_change(found, old, ident, "retiring (supersedes)")
        old["superseded_by"] = by
        self._stamp_change(old, retired=True)
        return old

    def update(
        self,
        id: str,
        *,
        content: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        tags: Iterable[str] | None = None,
        project: str | None = None,
        base_priority: float | None = None,
    ) -> Updated:
        """Change fields of one entry, validated, in one transaction.

        A field left out or None stays as it is, for every field: a client
        that sends every argument (null for those it does not mean to
        change) changes only what it gave. Clearing takes an explicit value:
        ``scope="context"`` removes the scope (``"always"`` sets it; either
        in any case), ``tags=[]`` the tags, ``project=""`` the project; a
        ``base_priority`` is replaced, never removed (5 is the default). An
        update that takes an always-scope entry out of that scope says so in
        a ``scope:`` warning, since the entry stops loading on every recall.
        The whole entry after the change is validated like a new one.

        Raises:
            InvalidInput: unknown or unreadable ``id``, no field given, or a
                bad value (named).
            StoreUnavailable: the database failed (nothing was changed).
        """
        _require_id(id)
        changes = self._changes(content, type, scope, tags, project, base_priority)

        def work(tx: WriteTx) -> Updated:
            old = self._updatable(tx, id)
            if changes.get("scope") == _ALWAYS:
                self._need_pin("scope", "making an entry always-scope", id=id)
            entry = dict(old)
            if "content" in changes:  # a precomputed cost of the old content
                entry.pop("token_count", None)
            for field, value in changes.items():
                if value is None:
                    entry.pop(field, None)
                else:
                    entry[field] = value
            vouching = self._stamp_change(entry)
            warnings = self._check(entry)
            if vouching == "promoted":
                warnings.append(
                    f"quarantine: entry {id!r} was written in quarantine (by a "
                    f"writer nobody vouched for); writer {self.writer.name!r}, "
                    "holding pin, changed it, which vouches for it: it now "
                    "loads in its type's pool"
                )
            elif vouching == "kept":
                warnings.append(
                    f"quarantine: entry {id!r} stays in quarantine: only a "
                    "writer holding pin vouches for an entry by changing it"
                )
            same = _duplicate(
                tx,
                entry,
                self._now(),
                ignore=(id,),
                vouched=not self.writer.quarantine,
            )
            if same is not None:
                raise InvalidInput(
                    "content",
                    f"entry {id!r} would become the same memory (content, type "
                    f"and scope) as active entry {same['id']!r}; forget {id!r} "
                    "instead, or make them differ",
                    id=id,
                )
            tx.replace(_row(entry), self._change("update"))
            if old.get("scope") == _ALWAYS and entry.get("scope") != _ALWAYS:
                warnings.append(
                    f"scope: entry {id!r} was always-scope and is now "
                    "context-scope: it no longer loads on every recall, only "
                    "when it ranks (scope='always' puts it back)"
                )
            if entry.get("scope") == _ALWAYS:
                warnings.extend(self._always_warnings(tx))
            return Updated(entry, warnings)

        updated = self._write(work)
        self._after_write()
        return updated

    def _updatable(self, tx: WriteTx, id: str) -> dict[str, Any]:
        """The stored entry ``update`` changes, if this writer may."""
        found = tx.get(id)
        if found is None:
            raise InvalidInput("id", f"no entry {id!r} in namespace {self.namespace!r}")
        old = _parse(found)
        if not isinstance(old, dict):
            raise InvalidInput(
                "id", f"entry {id!r} is unreadable ({old}); forget it instead"
            )
        try:
            _require_name("id", id)
        except InvalidInput as exc:
            raise InvalidInput(
                "id",
                f"entry {id!r} has an id no write accepts ({exc.message}); "
                "forget it and remember its content again",
            ) from None
        self._may_change(found, old, id, "changing")
        return old

    @staticmethod
    def _changes(
        content: str | None,
        kind: str | None,
        scope: str | None,
        tags: Iterable[str] | None,
        project: str | None,
        base_priority: float | None,
    ) -> dict[str, Any]:
        """The checked new values (None: remove the key); a field given as
        None is not a change."""
        changes: dict[str, Any] = {}
        for field, value in (
            ("content", content),
            ("type", kind),
            ("project", project),
        ):
            _not_null_text(field, value)
        if content is not None:
            changes["content"] = _require_text("content", content)
        if kind is not None:
            changes["type"] = _require_name("type", kind)
        if scope is not None:
            changes["scope"] = _ALWAYS if _scope(scope) == _ALWAYS else None
        if tags is not None:
            changes["tags"] = _written_tags(tags) or None
        if project is not None:
            changes["project"] = (
                None if project == "" else _require_text("project", project)
            )
        if base_priority is not None:
            changes["base_priority"] = _require_priority(base_priority)
        if not changes:
            raise InvalidInput(
                None,
                "nothing to update: give content, type, scope, tags, project "
                "or base_priority (a field sent as null is left as it is)",
            )
        return changes

    @overload
    def forget(self, id: str) -> bool: ...

    @overload
    def forget(self, *, written_by: str) -> int: ...

    @overload
    def forget(
        self, id: str | None = None, *, written_by: str | None = None
    ) -> bool | int: ...

    def forget(
        self, id: str | None = None, *, written_by: str | None = None
    ) -> bool | int:
        """Delete an entry; True when this namespace had it, else False.

        ``forget(written_by=NAME)`` deletes every entry NAME wrote (their
        ``written_by``, stamped by the store: cleaning up after a
        compromised token) and returns how many entries were deleted; it
        needs the ``pin`` grant. Forgetting an always-scope entry needs
        ``pin`` too, and a quarantined writer forgets only quarantined
        entries.

        Entries whose ``superseded_by`` chain ends at it are deleted too. On
        SQLite the deleted bytes are overwritten (``secure_delete``) and the
        WAL checkpointed and truncated, so the content is gone from the
        files, unless another connection's open read holds the WAL back:
        then :attr:`scrub_pending` is True until a later call or ``close``
        truncates it. On PostgreSQL the row is deleted (VACUUM reclaims its
        space).

        Raises:
            InvalidInput: ``id`` is not a non-empty str, or both or neither
                of ``id`` and ``written_by`` given.
            NotGranted: the writer lacks the grant (nothing was deleted).
            StoreUnavailable: the database failed (nothing was deleted).
        """
        if (id is None) == (written_by is None):
            raise InvalidInput(None, "give an id or written_by, not both")
        if written_by is not None:
            return self._forget_writer(_require_text("written_by", written_by))
        _require_id(id)
        ident = str(id)

        def work(tx: WriteTx) -> bool:
            found, entry = _stored_entry(tx, ident)
            if found is None:
                return False
            self._may_change(found, entry, ident, "forgetting")
            change = self._change("forget")
            return bool(_delete_chains(tx, [ident], change, self._may_forget))

        forgotten = self._write(work)
        self._after_write()
        return forgotten

    def _forget_writer(self, name: str) -> int:
        self._need_pin("written_by", f"forgetting everything {name!r} wrote")

        def work(tx: WriteTx) -> int:
            idents = [row.id for row in tx.written_by(name)]
            return _delete_chains(tx, idents, self._change("forget"))

        count = self._write(work)
        self._after_write()
        return count

    # --- reads -------------------------------------------------------------

    def get(self, id: str) -> dict[str, Any] | None:
        """The entry with this id in this namespace, or None."""
        _require_id(id)
        found = self._backend.read(self.namespace, lambda tx: tx.get(id))
        return None if found is None else _readable(found)

    def history(self, id: str) -> builtins.list[dict[str, Any]]:
        """Every version of the entry ``id`` in this namespace, oldest first
        (``[]`` for an id it never held).

        Each version is ``{"version": N, "operation": ..., "entry": {...}
        or None, "by": writer or None, "at": ISO 8601 UTC}``: the entry as
        it was after the operation (``remember``, ``update``,
        ``supersede``: the retired entry's version, ``import``,
        ``migrated``: its state when the database gained its history, and
        ``adopted``, by None: a body another tool wrote, when the store
        first read it);
        ``forget`` is a tombstone, and once an entry is forgotten every
        version of it has ``entry`` None (forgetting wins over history).
        One read of the history by its primary key; no recall reads it.

        Raises:
            InvalidInput: ``id`` is not a str.
            StoreUnavailable: the database failed.
        """
        _require_id(id)
        found = self._backend.read(self.namespace, lambda tx: tx.history(id))
        return [_version(id, version) for version in found]

    def list(
        self,
        *,
        type: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        scope: str | None = None,
        written_by: str | None = None,
    ) -> Page:
        """A page of this namespace's entries (retired ones too), oldest first.

        Pass ``next_cursor`` back to get the next page (with the same
        filters); every entry stored before the first page and not deleted
        since appears exactly once. ``type``, ``scope`` (``"always"`` or
        ``"context"``) and ``written_by`` (a writer's name, as the store
        stamped it) keep only the entries that have it.

        Raises:
            InvalidInput: ``limit`` not in 1..500, a cursor this store did not
                give, or a bad ``type``, ``scope`` or ``written_by``.
        """
        if type is not None:
            _require_name("type", type)
        if scope is not None:
            scope = _scope(scope)
        if written_by is not None:
            _require_text("written_by", written_by)
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= _MAX_PAGE
        ):
            raise InvalidInput(
                "limit", f"must be an int from 1 to {_MAX_PAGE}, got {limit!r}"
            )
        after = (
            0
            if cursor is None
            else _cursor_position(self._cursor_secret(), self.namespace, cursor)
        )
        rows = self._backend.read(
            self.namespace,
            lambda tx: tx.page(type, after, limit + 1, scope=scope, writer=written_by),
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(
            [_readable(row) for row in rows],
            _cursor(self._cursor_secret(), self.namespace, rows[-1].seq)
            if more
            else None,
        )

    def _cursor_secret(self) -> bytes:
        """The key of this database's list cursors, the same in every process
        and Store on it (so any worker accepts a cursor another gave): read
        once per Store; the first Store ever to need it draws it and stores
        it, and of two drawing at once the first stored wins (both read it
        back in their write)."""
        key = self._cursor_key
        if key is None:
            value = self._backend.read(
                self.namespace, lambda tx: tx.secret(_CURSOR_SECRET)
            )
            if value is None:
                drawn = os.urandom(32).hex()
                value = self._backend.write(
                    self.namespace, lambda tx: tx.keep_secret(_CURSOR_SECRET, drawn)
                )
            key = self._cursor_key = value.encode("utf-8")
        return key

    def recall(
        self,
        message: str,
        *,
        tags: Iterable[str] = (),
        project: str | None = None,
        now: datetime | None = None,
        pools: Sequence[Pool] | None = None,
        tz: str | None = None,
        as_of: datetime | None = None,
    ) -> Recall:
        """The entries to inject for this context, per pool, and the text.

        The text is the pools in the frame of ``_frame`` (stored data, not
        instructions); when an always-scope row could not be loaded, a
        block after it names the row. Rows that
        fail validation are left out and listed in ``skipped``; every other
        entry still loads. A recall with no write since the last one reads
        no entry rows. ``pools`` (None: the store's) fills other pools for
        this call, cached per list of pools. ``tz``, an IANA name such as
        ``"Europe/Paris"``, is the user's time zone: the times the message
        names ("yesterday") are the user's days; without it they are read
        in ``now``'s time zone (UTC when ``now`` is None or naive).

        ``as_of`` (an aware datetime) answers as the store would have at
        that moment: the entries and versions stored then, retired or not
        as they were then, ranked at ``now=as_of`` unless ``now`` is
        given; an entry forgotten since is not there (forgetting wins over
        history). ``store.recall(m, now=T)`` made at T and
        ``store.recall(m, as_of=T)`` later give the same ids, order and
        text, as long as nothing stored at T was forgotten since. It reads
        the ids changed since T (O(the namespace's versions and rows) in
        SQL, each by an index) and brings the cached snapshot back by them
        for the call (``_past.py``); the lexical and core rankings only.

        Raises:
            InvalidInput: a bad context, ``pools``, ``tz`` or ``as_of``
                (named; ``as_of`` with ``ranking="semantic"`` too).
        """
        context = _context(message, tags, project)
        now = _require_now(now)
        if pools is None:
            chosen_pools, quarantine = self.pools, self.quarantine_pool
        else:
            chosen_pools, quarantine = split_quarantine(_check_pools(pools))
        at = None if as_of is None else self._as_of(as_of)
        if now is None:
            now = datetime.now(timezone.utc) if as_of is None else as_of
        times = self._times(message, now, tz)  # parsed before the lock
        query = None if self._embedder is None else Query(self._embedder, message)
        # (as of a time: the cached snapshot brought back to it for the
        # block, or a snapshot of its own: _past.py)
        with self._locked_snapshot(at, chosen_pools) as snap:
            pools_now = self._pools_for(snap, chosen_pools, quarantine)
            # Each pool over its own part: lexical by the part's recall
            # index, bounded by its relevance's factors; semantic by one
            # loop over the part (its hybrid factor is above 1 for nearly
            # every entry: no index skips any).
            got = snap.parts.recall(
                pools_now,
                context,
                now=now,
                token_counter=self._token_counter,
                relevance=self._relevance(snap, context, now, times, query),
                # (as of a time: the indexes are set aside, _past.derived)
                scan=self.ranking == "semantic" or at is not None,
            )
            recalled = _recalled(got, snap, self.writer.name)
            recalled.warnings.extend(_stale_warnings(got, snap))
            return recalled

    def explain(
        self,
        message: str,
        *,
        tags: Iterable[str] = (),
        project: str | None = None,
        now: datetime | None = None,
        ids: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        outcomes: Iterable[str] | None = None,
        summary: bool = False,
        tz: str | None = None,
        as_of: datetime | None = None,
    ) -> str:
        """``poolsplit.explain``'s table for this context, plus skipped rows.

        ``ids``, ``types`` and ``outcomes`` keep only the matching entries'
        rows, ``summary`` leaves the rows out (the count of each outcome, the
        pools and the warnings stay), as in ``poolsplit.explain``. With the
        default pools, a default pool no active entry has the type of (and
        an empty spill-over pool) is left out of the table and named in one
        line, instead of warning that its types are misspelt. ``tz`` and
        ``as_of`` as in :meth:`recall`.

        Raises:
            InvalidInput: a bad context, filter, ``tz`` or ``as_of`` (named).
        """
        context = _context(message, tags, project)
        now = _require_now(now)
        filters = _explain_filters(ids, types, outcomes, summary)
        moment = None if as_of is None else self._as_of(as_of)
        if now is None and as_of is not None:
            now = as_of
        at = datetime.now(timezone.utc) if now is None else now
        times = self._times(message, at, tz)  # parsed before the lock
        with self._locked_snapshot(moment, None) as snap:
            pools, unused = self._explained_pools(snap)
            only = filters["ids"]
            skipped = [s for s in snap.skipped if only is None or s.id in only]
            if not pools:  # nothing the default pools take: nothing to decide
                text = (
                    f"no active entry in namespace {self.namespace!r}: "
                    "recall returns nothing\n"
                )
                return text + _explain_tail(unused, skipped, summary)
            reports, relevance = self._explain_reports(
                snap, pools, context, now, (at, times), filters, summary
            )
        text = "\n".join(
            (_QUARANTINE_HEAD if i else "") + r.render(summary=summary).rstrip("\n")
            for i, (r, _) in enumerate(reports)
        )
        return text + "\n" + relevance + _explain_tail(unused, skipped, summary)

    def _explain_reports(
        self,
        snap: _Snapshot,
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        now: datetime | None,
        read: tuple[datetime, Times],
        filters: Mapping[str, builtins.list[str] | None],
        summary: bool,
    ) -> tuple[
        builtins.list[tuple[poolsplit.Explanation, builtins.list[dict[str, Any]]]],
        str,
    ]:
        """What :meth:`explain` reports on ``snap`` (under the store's lock):
        ``poolsplit.explain``'s report of each part recall fills, with
        recall's pools and scorer (each entry by its own pool's part; the
        quarantine pool over the quarantined entries alone), and the lines
        on relevance, provenance and missing vectors. ``read``: the time
        the message is read at, and what it says of time."""
        at, times = read
        make = self._relevance(snap, context, at, times)
        ranked = {} if make is None else snap.parts.relevances(make)
        pools = snap.parts.floored(pools, ranked)
        scorer = snap.parts.scorer(context, ranked)
        reports = []
        for shown, entries in _explained_parts(snap, pools):
            report = poolsplit.explain(
                entries,
                shown,
                context,
                scorer=scorer,
                token_counter=self._token_counter,
                now=now,
                ids=filters["ids"],
                types=filters["types"],
                outcomes=filters["outcomes"],
            )
            reports.append((report, entries))
        relevance = ""
        if ranked:
            relevance = _relevance_lines(ranked, snap, reports)
        relevance += _provenance_lines(reports, summary)
        if snap.space is not None and self._catchup is not None:
            relevance += missing_note(snap.space, self._catchup.error)
        return reports, relevance

    def _as_of(self, as_of: object) -> str:
        """``as_of`` checked, as the history compares times."""
        if self.ranking == "semantic":
            raise InvalidInput(
                "as_of",
                "is not available with ranking='semantic' (the vectors of "
                "past contents are not kept); open the store with 'lexical'",
            )
        return _moment(as_of, "as_of")

    @contextlib.contextmanager
    def _locked_snapshot(
        self, at: str | None, pools: Sequence[Pool] | None
    ) -> Iterator[_Snapshot]:
        """For a block: the snapshot of now (:meth:`_snapshot`) under
        ``_cache_lock``, or of ``at`` (:meth:`_snapshot_at`: under the lock
        while it is the store's own, brought back to ``at``)."""
        if at is not None:
            with self._snapshot_at(at, pools) as then:
                yield then
            return
        with self._cache_lock:
            yield self._snapshot(pools)

    @contextlib.contextmanager
    def _snapshot_at(
        self, at: str, pools: Sequence[Pool] | None
    ) -> Iterator[_Snapshot]:
        """The candidates for ``pools`` (None: the store's) as they were at
        ``at`` (``_past.py``'s rule), for the block. Under ``_cache_lock``,
        one read transaction brings the cached snapshot forward (as
        :meth:`_snapshot` does) and reads what differs from the history's
        state at ``at``: when few rows do, the cached snapshot is brought
        back to ``at`` for the block, which runs under the lock, and
        forward again after it (``_past.derived``; dropped from the cache if
        that fails half way); else a snapshot of its own is built, never
        cached, and the block runs on it without the lock (a build of
        10,000 entries takes most of a second: no other recall waits)."""
        pools = self.pools if pools is None else tuple(pools)
        key = (self._owner, pools)
        with self._cache_lock:
            cached: _Snapshot | None = snapshots.get(key)
            types = _candidate_types(pools)
            after = None if cached is None else cached.position
            most = 0 if cached is None else _most_changes(cached)

            def work(tx: ReadTx) -> tuple[Since, Past, builtins.list[Stored] | None]:
                since = tx.since(after, types, most)
                past = tx.past(at)
                if since.changed is None:  # read whole: every candidate row
                    return since, past, since.rows
                if cached is not None and derives(past, cached):
                    return since, past, None
                return since, past, tx.candidates(types)

            since, past, candidates = self._backend.read(self.namespace, work)
            snap = self._brought(pools, cached, since)
            if candidates is None or derives(past, snap):

                def drop() -> None:  # half applied: the next recall reads anew
                    if snapshots.get(key) is snap:
                        snapshots.drop(key)

                with derived(snap, past, pools, drop) as then:
                    yield then
                return
        yield built(past, pools, self.ranking, candidates)

    def _explained_pools(
        self, snap: _Snapshot
    ) -> tuple[builtins.list[Pool], builtins.list[str]]:
        """The pools explain shows, and the default ones it leaves out: with
        the default pools, those no active entry has a type of select nothing
        (the default pools admit disjoint types), so leaving them out changes
        no decision and spares a warning that a type is misspelt (none at
        all for a store with no active entry: a user who never configured a
        pool is never told one may be misspelt)."""
        pools = self._pools_for(snap)
        if self.pools is not None:
            return pools, []
        shown = [
            p
            for p in pools
            if p.name == QUARANTINE or not snap.types.isdisjoint(p.types or ())
        ]
        unused = [p.name for p in pools if p not in shown]
        return shown, unused

    def _times(self, message: str, now: datetime, tz: str | None) -> Times:
        """What ``message`` says of time (its windows, its other terms), read
        at ``now`` in the time zone ``tz``: before any lock (it needs no
        snapshot, and a message full of times costs milliseconds); nothing
        for ``core``."""
        zone = _zone(tz)
        if self.ranking == "core":
            return Times((), frozenset(), frozenset())
        return read_times(message, _zoned(now, zone))

    def _relevance(
        self,
        snap: _Snapshot,
        context: Mapping[str, Any],
        now: datetime,
        times: Times,
        query: Query | None = None,
    ) -> Callable[[Part], Relevance] | None:
        """The message's relevance at ``now`` with the ``times`` it names,
        per part: lexical, or hybrid with the part's
        vectors (the message embedded once); None for the core ranking."""
        message = context["message"]
        if self.ranking == "core":
            return None
        if snap.space is None or self._embedder is None:
            return lexical(message, now, times)
        snap.space.refresh(self._read_vectors)
        assert self._catchup is not None  # the semantic ranking's
        self._catchup.want(snap.space)
        if query is None:
            query = Query(self._embedder, message)
        return hybrid(snap.space, query, message, now, times)

    def _space(self) -> Space:
        """The store's snapshot's vectors, refreshed (the caller holds
        ``_cache_lock``): what the catch-up embeds."""
        snap = self._snapshot()
        assert snap.space is not None  # the semantic ranking's
        snap.space.refresh(self._read_vectors)
        return snap.space

    def _read_vectors(self, ids: Sequence[str]) -> dict[str, tuple[str, bytes]]:
        """id -> (digest, vector) of the stored vectors of these ids."""
        return self._backend.read(
            self.namespace, lambda tx: tx.vectors(MODEL, list(ids))
        )

    def _write_vectors(
        self, space: Space, rows: Sequence[tuple[str, str, bytes]]
    ) -> None:
        """Store (id, digest, vector) rows, in a transaction of their own;
        the snapshot whose ``space`` it is stays current (no entry changed)."""
        with self._cache_lock:
            snap = snapshots.get((self._owner, self.pools))
        if snap is None or snap.space is not space:
            self._backend.write(self.namespace, lambda tx: tx.put_vectors(MODEL, rows))
            return
        self._write_beside(snap, lambda tx: tx.put_vectors(MODEL, rows))

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every entry of this namespace that has no vector of its
        current content (the semantic ranking's); return how many were
        embedded.

        What the background catch-up does, in the caller's thread and to the
        end: batches of 32, each written in a transaction of its own, so an
        interrupted reindex keeps what it embedded and the next one embeds
        only what is still missing (a vector another process stored is read,
        not embedded again). ``progress(done, total)`` is called before the
        first batch and after each.

        Raises:
            InvalidInput: the store's ranking is not ``semantic``.
            StoreUnavailable: the database failed (the batches written
                before stay).
        """
        if self._catchup is None:
            raise InvalidInput(
                "ranking",
                f"reindex embeds for ranking='semantic', not {self.ranking!r}",
            )
        return self._catchup.run(progress)

    def _write_beside(self, snap: _Snapshot, work: Callable[[WriteTx], T]) -> T:
        """``work``, a write that changes no entry (the semantic ranking's
        vectors): when the write read that no entry changed since
        ``snap``'s position (``settled``, at most 0 rows) and ``snap`` is
        still there, ``snap`` is marked current at the write's position
        (under ``_cache_lock``), so the recall after reads nothing (the
        write moved the backend's version). Else the next recall reads the
        log."""
        after = snap.position
        seen: builtins.list[Since | None] = [None]

        def run(tx: WriteTx) -> T:
            result = work(tx)
            seen[0] = tx.settled(after, [], 0)
            return result

        result = self._backend.write(self.namespace, run)
        since = seen[0]
        signal = None if since is None else self._committed_signal(since)
        with self._cache_lock:
            if since is not None and signal is not None and snap.position == after:
                snap.signal, snap.position = signal, since.position
        return result

    def _after_write(self) -> None:
        """Semantic ranking: have the catch-up embed what a write stored,
        in the background (the write has committed and answers first; the
        recalls until then rank it lexically). A forgotten entry's vector
        was deleted in its transaction (SqlTx.delete)."""
        if self._catchup is not None:
            self._catchup.nudge()

    def _pools_for(
        self,
        snap: _Snapshot,
        pools: Sequence[Pool] | None = None,
        quarantine: Pool | None = None,
    ) -> builtins.list[Pool]:
        """The pools a recall of ``snap`` fills: ``pools`` (None: the
        store's, else the defaults for the snapshot's types), then the
        quarantine pool when the snapshot holds a quarantined entry."""
        pools = self.pools if pools is None else pools
        chosen = list(pools) if pools is not None else default_pools(snap.types)
        if snap.parts.holds(QUARANTINE):
            chosen.append(self.quarantine_pool if quarantine is None else quarantine)
        return chosen

    def _snapshot(self, pools: Sequence[Pool] | None = None) -> _Snapshot:
        """The loaded candidates for ``pools`` (None: the store's), one
        cached snapshot per pools; the caller holds ``_cache_lock``.

        A recall whose backend version is the one last seen reads nothing
        more (nor does the one after this store's own write: see
        :meth:`_write`). Otherwise one read transaction
        gives, in one statement, the change log's position and the rows of
        this namespace changed since the snapshot's (none for a write to
        another namespace); the namespace is read whole on the first call,
        and when the log no longer reaches back to the snapshot or says
        that everything changed (a TRUNCATE), or more rows changed than the
        snapshot holds.
        """
        pools = self.pools if pools is None else tuple(pools)
        cached: _Snapshot | None = snapshots.get((self._owner, pools))
        if cached is not None and cached.signal == self._backend.version(
            self.namespace
        ):
            return cached
        types = _candidate_types(pools)
        after = None if cached is None else cached.position
        most = 0 if cached is None else _most_changes(cached)
        since = self._backend.since(self.namespace, after, types, most)
        return self._brought(pools, cached, since)

    def _brought(
        self, pools: tuple[Pool, ...] | None, cached: _Snapshot | None, since: Since
    ) -> _Snapshot:
        """``cached`` (None: none yet) brought to ``since``, read after its
        position (or whole), and kept in the cache; the caller holds
        ``_cache_lock``."""
        signal, position, changed, rows = since
        whole = changed is None or cached is None
        # A snapshot built from a whole read: one at a time per process, so
        # that 16 cold tenants at once do not hold 16 half-built snapshots
        # beside the budget's (under the GIL they would not be built faster
        # side by side). The read itself is outside: a slow database (a
        # pool's wait, a standby catching up) never holds up another's.
        with _WHOLE_READS if whole else contextlib.nullcontext():
            snap = cached
            if changed is None or snap is None:
                snap = _Snapshot(pools, ranking=self.ranking)
                snap.apply([], rows)
            elif changed or rows:  # else only other namespaces changed: no work
                snap.apply(changed, rows)
            snap.signal, snap.position = signal, position
            self._keep(pools, snap, None if changed is not None else rows)
        return snap

    def _write(self, work: Callable[[WriteTx], T]) -> T:
        """``work`` in one write transaction of this namespace; then the
        store's snapshot is brought forward to what the write committed, by
        the rows changed since the snapshot's position, which the write read
        last (``settled``), so the recall after the write reads nothing
        more. On SQLite only when no other commit changed entries since
        (``signal_at``: a read of the log's position, no entry row).

        Only after the COMMIT succeeded: a write that raised (rolled back,
        or its COMMIT's outcome unknown) changes no snapshot, and the next
        recall reads the change log as after any other process's write.
        """
        pools = self.pools
        # Never waiting for the lock: a write does not queue behind a recall
        # building a snapshot (a whole read).
        if not self._cache_lock.acquire(blocking=False):
            return self._backend.write(self.namespace, work)
        try:
            cached: _Snapshot | None = snapshots.get((self._owner, pools))
            after = None if cached is None else cached.position
            most = 0 if cached is None else _most_changes(cached)
        finally:
            self._cache_lock.release()
        if cached is None or after is None:
            return self._backend.write(self.namespace, work)
        types = _candidate_types(pools)
        seen: builtins.list[Since | None] = [None]

        def run(tx: WriteTx) -> T:
            seen[0] = None  # a retried attempt's own
            result = work(tx)
            seen[0] = tx.settled(after, types, most)
            return result

        result = self._backend.write(self.namespace, run)
        since = seen[0]
        signal = None if since is None else self._committed_signal(since)
        if since is not None and signal is not None:
            self._carry(pools, cached, after, since._replace(signal=signal))
        return result

    def _committed_signal(self, since: Since) -> object | None:
        """After a write committed: the version a recall will compare while
        the log stays at ``since.position`` (None: it moved on, or the read
        failed: the write has committed, never its error)."""
        try:
            return self._backend.signal_at(self.namespace, since.position)
        except StoreUnavailable:
            return None

    def _carry(
        self,
        pools: tuple[Pool, ...] | None,
        snap: _Snapshot,
        after: int,
        since: Since,
    ) -> None:
        """Bring ``snap`` (read at position ``after`` when the write began)
        to ``since``, what the committed write read of the changes after
        ``after``, unless it left the cache or moved past ``since`` (a
        recall in another thread read a later state: applying older rows
        would take it back). A snapshot at a position between the two is
        brought forward too: the rows changed after ``after`` include those
        changed after its position, read as they are at ``since``. Not
        while a recall holds the lock (the write has committed: its caller
        does not wait for a recall; that recall or the next reads the log).
        If applying the rows fails, the snapshot leaves the cache (the next
        recall reads the namespace whole). Applying parsed rows raises
        nothing but ``MemoryError`` (``loadable`` skips a bad row, it never
        raises): that one the committed write does not report; any other
        error is a bug, and propagates from the write that committed."""
        if not self._cache_lock.acquire(blocking=False):
            return
        try:
            if snapshots.get((self._owner, pools)) is not snap:
                return
            if not after <= snap.position <= since.position:
                return
            assert since.changed is not None  # settled says None otherwise
            try:
                if since.changed or since.rows:
                    snap.apply(since.changed, since.rows)
                    if snap.space is not None:  # new: none has a vector yet
                        snap.space.refresh(None)
            except MemoryError:  # the snapshot grew: the expected failure
                snapshots.drop((self._owner, pools))  # half applied: read anew
                return
            except BaseException:  # a bug: said, after the committed write
                snapshots.drop((self._owner, pools))  # half applied: read anew
                raise
            snap.signal, snap.position = since.signal, since.position
            self._keep(pools, snap, None)
        finally:
            self._cache_lock.release()

    def _keep(
        self,
        pools: tuple[Pool, ...] | None,
        snap: _Snapshot,
        rows: Sequence[Stored] | None,
    ) -> None:
        """Put the snapshot in the process's budget, with its estimated bytes
        (per entry: estimated from ``rows`` when it was read whole, else as
        when it last was); at most _MAX_CACHED lists of pools per store."""
        if rows is not None or pools not in self._entry_bytes:
            body = sum(len(row.body) for row in rows or ()) / max(len(rows or ()), 1)
            self._entry_bytes[pools] = (
                int(body * _SNAPSHOT_BYTES_PER_BODY_BYTE) + _SNAPSHOT_BYTES_PER_ENTRY
            )
        key = (self._owner, pools)
        if snapshots.get(key) is None and snapshots.count(self._owner) >= _MAX_CACHED:
            oldest = snapshots.oldest_of(self._owner)
            if oldest is not None:
                snapshots.drop(oldest)
        size = (len(snap) + len(snap.skipped) + 1) * self._entry_bytes[pools]
        if snap.space is not None:  # the semantic ranking's matrix, caught up
            size += len(snap) * VECTOR_BYTES
        snapshots.put(key, snap, size)

    # --- import / export ---------------------------------------------------

    def export_jsonl(self, dest: Source) -> int:
        """Write every entry of this namespace, one JSON object a line, oldest
        first; return the count.

        A path is written whole or not at all: to a temporary file in the
        same folder, flushed to disk, then renamed over ``dest`` (a full disk
        never destroys the previous backup; its permissions are kept).

        Raises:
            StoreUnavailable: the database failed, ``dest`` cannot be
                written, or a stored row is not a JSON object (named: fix or
                forget it; a backup that silently lacks a row is worse).
        """
        rows = self._backend.read(self.namespace, lambda tx: tx.every())
        lines = []
        for stored in rows:
            value = _parse(stored)
            if not isinstance(value, dict):
                raise StoreUnavailable(
                    "unreadable entry",
                    f"{stored.id!r} in namespace {self.namespace!r}",
                    f"{value}; fix or forget it, then export again",
                )
            lines.append(_dumps(value) + "\n")
        text = "".join(lines)
        if isinstance(dest, (str, os.PathLike)):
            _replace_file(os.fspath(dest), text)
        else:
            dest.write(text)
        return len(lines)

    def import_jsonl(
        self, source: Source, *, replace: bool = False, keep_provenance: bool = False
    ) -> Imported:
        """Store every entry of a JSONL file, all or nothing; return the count
        of distinct ids written (an :class:`Imported`, an int with warnings).

        Each line is validated like ``remember``; blank lines are skipped; an
        entry without an ``id`` gets one. A duplicate id inside the file or
        against this namespace is an error naming both lines, unless
        ``replace=True`` (the later line wins; a stored entry is
        overwritten). A ``superseded_by`` must name another id of the file or
        of this namespace. A line that is the same memory (content after
        whitespace normalisation, type and scope) as an active entry already
        stored is not written, as ``remember`` does: an ``idempotent``
        warning names the line and the stored entry, and a ``superseded_by``
        naming the line is pointed at the stored entry (the file's own lines
        are not compared: a backup is restored as it was). Each line's
        warnings (``remember``'s: a misleading ``base_priority``, a type no
        pool admits, ...) come back as ``line N: field: message``, in line
        order, before the ``idempotent`` ones; the always-scope total is
        not among them (every recall reports it).

        Provenance: each line written is stamped as this store's writer's,
        now (``written_by``, ``written_at``; quarantined if the writer is),
        whatever the file says, unless ``keep_provenance=True`` (restoring
        a backup ``export_jsonl`` wrote), which keeps the file's and needs
        the ``pin`` grant. An always-scope line, or a line replacing a
        stored always-scope entry, needs ``pin``; a quarantined writer
        replaces only quarantined entries.

        Raises:
            InvalidInput: the first bad line (``line`` and ``field`` set);
                nothing is written.
            NotGranted: the writer lacks a grant the file needs; nothing is
                written.
            StoreUnavailable: the database failed; nothing is written.
        """
        if not isinstance(keep_provenance, bool):
            raise InvalidInput("keep_provenance", "must be True or False")
        if keep_provenance:
            self._need_pin("keep_provenance", "keeping a file's provenance")
        entries, lines, checked = self._read_jsonl(source, replace, keep_provenance)

        def work(tx: WriteTx) -> Imported:
            ids = list(entries)
            stored = tx.existing(ids)
            if stored and not replace:
                ident = next(i for i in ids if i in stored)
                raise InvalidInput(
                    "id",
                    f"{ident!r} is already stored in namespace "
                    f"{self.namespace!r}; pass replace=True to overwrite it",
                    line=lines[ident],
                    id=ident,
                )
            for ident in sorted(stored, key=lines.__getitem__):
                old = self._check_replaced(tx, ident, lines[ident])
                if not keep_provenance:  # a replacement is a change of ``old``
                    self._restamp(entries[ident], old)
            kept, warnings = self._unique(tx, entries, lines)
            self._check_targets(tx, kept, lines)
            fresh = []
            change = self._change("import")
            for ident, entry in kept.items():
                if ident in stored:
                    tx.replace(_row(entry), change, clear_key=True)
                else:
                    fresh.append(_row(entry))
            tx.insert_many(fresh, change)
            return Imported(len(kept), [*checked, *warnings])

        count = self._write(work)
        self._after_write()
        return count

    def _unique(
        self,
        tx: WriteTx,
        entries: dict[str, dict[str, Any]],
        lines: dict[str, int],
    ) -> tuple[dict[str, dict[str, Any]], builtins.list[str]]:
        """The lines to write: each one that repeats an active memory already
        stored is left out with an ``idempotent`` warning, and a
        ``superseded_by`` naming a left-out line is pointed at the stored
        entry. Lines of one file are not compared with each other: a backup
        is restored as it was written."""
        keys = {ident: _memory_key(entry) for ident, entry in entries.items()}
        stored = _stored_memories(
            tx,
            keys.values(),
            entries,
            self._now(),
            vouched=not self.writer.quarantine,
        )
        same_as = {
            ident: stored[key]
            for ident, key in keys.items()
            if key is not None and key in stored
        }
        warnings = [
            f"line {lines[ident]}: {_idempotent(first)}"
            for ident, first in same_as.items()
        ]
        kept = {}
        for ident, entry in entries.items():
            if ident in same_as:
                continue
            target = entry.get("superseded_by")
            if isinstance(target, str) and target in same_as:
                kept[ident] = {**entry, "superseded_by": same_as[target]}
            else:
                kept[ident] = entry
        return kept, warnings

    def _check_replaced(self, tx: WriteTx, ident: str, line: int) -> dict[str, Any]:
        """The stored entry a line replaces ({} if unreadable), if this
        writer may: always-scope needs ``pin``; a quarantined writer
        replaces only quarantined entries."""
        found, old = _stored_entry(tx, ident)
        try:
            self._may_change(found, old, ident, "replacing")
        except NotGranted as exc:
            raise NotGranted(
                exc.field, exc.message, grant=exc.grant, id=ident, line=line
            ) from None
        return old

    def _restamp(self, entry: dict[str, Any], old: Mapping[str, Any]) -> None:
        """A line replacing stored entry ``old``: its author stays ``old``'s
        (none if it had none), this writer is who changed it, now."""
        for field in (WRITTEN_BY, WRITTEN_AT):
            if isinstance(old.get(field), str):
                entry[field] = old[field]
            else:
                entry.pop(field, None)
        entry[UPDATED_BY] = self.writer.name
        entry[UPDATED_AT] = _created(self._clock())

    def _check_targets(
        self, tx: WriteTx, entries: dict[str, dict[str, Any]], lines: dict[str, int]
    ) -> None:
        """Every ``superseded_by`` names another entry of the file or of this
        namespace (checked per line: an entry retiring itself never loads)."""
        targets = {
            ident: entry["superseded_by"]
            for ident, entry in entries.items()
            if isinstance(entry.get("superseded_by"), str) and entry["superseded_by"]
        }
        outside = sorted({t for t in targets.values() if t not in entries})
        known = set(entries) | tx.existing(outside)
        for ident, target in targets.items():
            if target == ident:
                raise InvalidInput(
                    "superseded_by",
                    f"{ident!r} names the entry itself, so it would retire itself "
                    "and never load; name the entry that replaces it, or leave "
                    "superseded_by out",
                    line=lines[ident],
                    id=ident,
                )
            if target not in known:
                raise InvalidInput(
                    "superseded_by",
                    f"{target!r} is not an entry of the file or of namespace "
                    f"{self.namespace!r}",
                    line=lines[ident],
                    id=ident,
                )

    def _read_jsonl(
        self, source: Source, replace: bool, keep_provenance: bool = False
    ) -> tuple[dict[str, dict[str, Any]], dict[str, int], builtins.list[str]]:
        """The file's entries by id (checked), each id's line, and the
        lines' warnings (``line N: ...``)."""
        if isinstance(source, (str, os.PathLike)):
            try:
                with open(source, encoding="utf-8", newline="") as file:
                    text = file.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput("source", f"cannot read {source}: {exc}") from None
        else:
            text = source.read()
        entries: dict[str, dict[str, Any]] = {}
        lines: dict[str, int] = {}
        warnings: builtins.list[str] = []
        # JSONL lines end at "\n" only: str.splitlines would also split at
        # U+0085 or U+2028 inside a string, which export writes unescaped.
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(
                    None, f"not valid JSON: {exc}", line=number
                ) from None
            except RecursionError:
                raise InvalidInput(
                    None,
                    f"is nested too deeply to read (an entry may nest at most "
                    f"{_MAX_DEPTH} levels)",
                    line=number,
                ) from None
            if not isinstance(value, dict):
                raise InvalidInput(
                    None, f"must be a JSON object, got {_json_kind(value)}", line=number
                )
            value.setdefault("id", _new_id())
            if not keep_provenance:
                self._stamp_new(value)
            try:
                warnings += [f"line {number}: {w}" for w in self._check(value)]
            except InvalidInput as exc:
                raise InvalidInput(
                    exc.field, exc.message, line=number, id=str(value.get("id"))
                ) from None
            if value.get("scope") == _ALWAYS and not self.writer.pin:
                raise NotGranted(
                    "scope",
                    "an always-scope entry needs the 'pin' grant, which writer "
                    f"{self.writer.name!r} does not hold; nothing was written",
                    grant="pin",
                    id=str(value.get("id")),
                    line=number,
                )
            ident = value["id"]
            if ident in entries and not replace:
                raise InvalidInput(
                    "id",
                    f"duplicate id {ident!r} on lines {lines[ident]} and {number}",
                    line=number,
                    id=ident,
                )
            entries.pop(ident, None)  # the later line keeps its place and line
            entries[ident] = value
            lines[ident] = number
        return entries, lines, warnings


def _replace_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file beside it, fsync,
    rename); StoreUnavailable ``cannot write export`` on any OSError."""
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        try:
            with open(temporary, "x", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            if os.path.exists(path):
                shutil.copymode(path, temporary)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
    except OSError as exc:
        raise StoreUnavailable("cannot write export", path, str(exc)) from None


def _version(ident: str, version: Version) -> dict[str, Any]:
    """One version as ``Store.history`` returns it."""
    entry = None
    if version.body is not None:
        entry = _readable(Stored(version.seq or 0, ident, None, version.body))
    return {
        "version": version.version,
        "operation": version.operation,
        "entry": entry,
        "by": version.by,
        "at": version.at,
    }


# ===========================================================================
# open_store
# ===========================================================================


def open_store(
    url: str | os.PathLike[str],
    *,
    namespace: str = "default",
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
    ranking: str = "lexical",
    pool_size: int = DEFAULT_POOL_SIZE,
    read_url: str | None = None,
    writer: str | None = None,
) -> Store:
    """Open (and create if needed) a store; one namespace of one database.

    ``writer``: the name stamped as ``written_by`` on what this store
    writes (default: the OS user's name); the store holds every grant
    (``Store.acting_as`` gives one of fewer).

    ``url``: a file path (str or ``pathlib.Path``), ``sqlite:///relative`` or
    ``sqlite:////absolute``, ``:memory:``, or ``postgresql://...`` /
    ``postgres://...`` (needs the ``postgres`` extra); either URL takes
    ``?busy_timeout=MS`` (see :func:`parse_url`). ``pools=None`` means
    :data:`DEFAULT_POOLS` plus the spill-over pool. ``ranking``: how a
    recall ranks the entries of a pool, one of :data:`RANKINGS`
    (memory/README.md's "Ranking").

    Every store of a process on one database shares its connections
    (memory/README.md's "Many tenants"): on PostgreSQL one pool of at most
    ``pool_size`` connections (4 by default; stores opened with another
    size get a pool of their own), on a SQLite file one writer and one
    reader; ``:memory:`` is a database of its own each time. The
    connections close with the process's last store on the database.
    ``read_url`` (PostgreSQL only): a streaming-replication standby of
    ``url`` that serves the reads once it has replayed the namespace's last
    write, so that a recall still sees every acknowledged write (else the
    primary serves them); writes and the warm recall's version check go to
    ``url``.

    Raises:
        InvalidInput: an empty or unsupported url, a bad namespace, pools,
            max_entry_tokens, ranking, pool_size or read_url.
        StoreUnavailable: the database cannot be opened (one line naming the
            cause: missing folder, not a database, read-only, unreachable).
    """
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str):
        raise InvalidInput("url", f"must be a str, got {type(url).__name__}")
    if not url.strip():
        raise InvalidInput(
            "url",
            "must be a file path, sqlite:///path, :memory: or postgresql://..., "
            f"got {url!r}",
        )
    _require_name("namespace", namespace)
    checked_pools = _check_pools(pools)
    split_quarantine(checked_pools)  # a quarantine pool naming types: refused
    chosen_writer = Writer(default_writer_name() if writer is None else writer)
    if type(max_entry_tokens) is not int or max_entry_tokens < 1:
        raise InvalidInput(
            "max_entry_tokens", f"must be a positive int, got {max_entry_tokens!r}"
        )
    if not callable(token_counter):
        raise InvalidInput("token_counter", "must be callable")
    if ranking not in RANKINGS:
        raise InvalidInput("ranking", f"must be one of {RANKINGS}, got {ranking!r}")
    if ranking == "semantic":
        try:
            Embedder.shared()
        except ImportError as exc:
            raise InvalidInput("ranking", str(exc)) from None
    if type(pool_size) is not int or pool_size < 1:
        raise InvalidInput("pool_size", f"must be a positive int, got {pool_size!r}")
    target = parse_url(url)
    if read_url is not None and (
        target.kind != "postgresql"
        or not isinstance(read_url, str)
        or not read_url.startswith(_POSTGRES_SCHEMES)
    ):
        raise InvalidInput(
            "read_url",
            f"must be a postgresql:// standby of a postgresql:// url, got {read_url!r}",
        )
    return Store(
        _backend(target, url, pool_size, read_url),
        namespace=namespace,
        pools=checked_pools,
        token_counter=token_counter,
        max_entry_tokens=max_entry_tokens,
        ranking=ranking,
        writer=chosen_writer,
    )


def _backend(target: Target, url: str, pool_size: int, read_url: str | None) -> Handle:
    """This process's backend of the database (one per database: see
    open_store), or a new one for ``:memory:``."""
    if target.kind == "postgresql":
        try:
            standby = None if read_url is None else parse_url(read_url).where
        except InvalidInput as exc:
            raise InvalidInput("read_url", exc.message) from None
        return shared_backend(
            (target.kind, target.where, target.busy_ms, pool_size, standby),
            lambda: PostgresBackend(
                target.where,
                busy_ms=target.busy_ms,
                pool_size=pool_size,
                read_url=standby,
            ),
        )

    def sqlite() -> Backend:
        return SQLiteBackend(target.where, busy_ms=target.busy_ms, url=url)

    if target.where == _MEMORY:
        return own_backend(sqlite())
    # A file is one database whatever the pool size (one writer, one reader).
    where = os.path.realpath(target.where)
    return shared_backend((target.kind, where, target.busy_ms, 0, None), sqlite)


def set_snapshot_budget(nbytes: int) -> None:
    """Keep this process's snapshots (every store's loaded candidates)
    within about ``nbytes`` (256 MiB by default; memory/README.md's "Many
    tenants"): the least recently used leaves first and is read again by
    its store's next recall.

    Raises:
        InvalidInput: ``nbytes`` is not a positive int.
    """
    if type(nbytes) is not int or nbytes < 1:
        raise InvalidInput("nbytes", f"must be a positive int, got {nbytes!r}")
    snapshots.budget = nbytes


def _check_pools(pools: Sequence[Pool] | None) -> tuple[Pool, ...] | None:
    """Given pools checked by poolsplit's own rule (retrieve on no entries)."""
    if pools is None:
        return None
    if isinstance(pools, (str, bytes)) or not isinstance(pools, Iterable):
        raise InvalidInput(
            "pools", f"must be a list of Pool or None, got {type(pools).__name__}"
        )
    chosen = tuple(pools)
    if not chosen:
        raise InvalidInput("pools", "must not be empty (None means the default pools)")
    try:
        poolsplit.retrieve_pools([], chosen)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("pools", str(exc)) from None
    return chosen
