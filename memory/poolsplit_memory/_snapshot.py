"""The loaded candidates of a namespace (``_Snapshot``), brought forward by
the rows changed since, and the :class:`Recall` a recall of one returns.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from poolsplit import Pool, entry_type

from ._defaults import (
    _ALWAYS,
    pool_owners,
)
from ._frame import frame, not_loaded
from ._loadable import (
    _unreadable,
    loadable,
)
from ._pooled import Parts
from ._results import (
    Recall,
    Skipped,
)
from ._rows import _readable
from ._trust import is_quarantined
from ._types import Stored
from ._vectors import Space


class _Snapshot:
    """The loaded candidates of one namespace at one change-log position,
    brought forward by the rows changed since (never re-read whole).

    It holds what :func:`loadable` finds in the candidate rows, and keeps
    it equal to ``loadable`` over the rows as they are now: :meth:`apply`
    takes the changed rows' seqs and their current candidate rows (a seq
    without one was deleted or is no candidate any more), forgets what it
    knew of those seqs and loads the rows by ``loadable``. Entries enter and
    leave in one place each (:meth:`_enter`, :meth:`_leave`), which also
    keeps ``parts`` up to date: the entries split by the pool that owns
    their type, each with its ranking's statistics and, from its second
    recall, its recall index (``_pooled.Part``). The always-scope state
    (the budget warning, the always-scope rows not loaded) depends on all
    always-scope rows together, so it is recomputed from them, few by that
    rule's own cap, whenever one of them changes. Not thread-safe: the store changes and
    reads it under its lock.
    """

    def __init__(self, pools: Sequence[Pool] | None, *, ranking: str) -> None:
        self._pools = pools
        self.signal: object = None  # the backend's version when last checked
        self.position = 0  # the change log's position applied
        # The entries split by the pool that owns their type, each part
        # with its own statistics and recall index (_pooled.py).
        self.parts = Parts(pool_owners(pools), ranking)
        # The semantic ranking's: the entries' vectors, kept entry by entry
        # (_vectors.py), so that a change reads and hashes only its own.
        self.space = Space() if ranking == "semantic" else None
        self._types: collections.Counter[str] = collections.Counter()
        # seq -> (order key, Skipped): loadable lists the unreadable rows
        # first, then those validate refuses, each in seq order.
        self._skipped: dict[int, tuple[tuple[int, int], Skipped]] = {}
        self._always: dict[int, tuple[Stored, object]] = {}  # always-scope rows
        self.warnings: builtins.list[str] = []
        self.always_skipped: builtins.list[Skipped] = []
        self.half_changed = False  # an exchange failed half way: drop it

    @property
    def entries(self) -> builtins.list[dict[str, Any]]:
        """The valid, active entries some pool admits, in seq order."""
        return self.parts.entries()

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def types(self) -> frozenset[str]:
        """The types of the entries (what the spill-over pool admits)."""
        return frozenset(self._types)

    @property
    def skipped(self) -> builtins.list[Skipped]:
        return [item for _, item in sorted(self._skipped.values())]

    def apply(self, changed: Iterable[int], rows: Sequence[Stored]) -> None:
        """Bring the snapshot to the current state of the rows ``changed``
        (by ``seq``; the rows given count as changed too), whose current
        candidate rows are ``rows`` (a seq without one was deleted or is no
        candidate any more)."""
        touched = set(changed) | {row.seq for row in rows}
        always_changed = not touched.isdisjoint(self._always)
        for seq in touched:
            if self.parts.has(seq):
                self._leave(seq)
            self._skipped.pop(seq, None)
            self._always.pop(seq, None)
        values = [_readable(row) for row in rows]
        found = loadable(
            values,
            pools=self._pools,
            ids=[row.id for row in rows],
            scopes=[row.scope for row in rows],
        )
        seqs = {row.id: row.seq for row in rows}
        self._enter([seqs[entry["id"]] for entry in found.entries], found.entries)
        unreadable = {  # (only a skipped row can be one: most loads have none)
            row.id
            for row, value in zip(rows, values if found.skipped else ())
            if _unreadable(value) is not None
        }
        for item in found.skipped:
            late = 0 if item.id in unreadable else 1
            self._skipped[seqs[item.id]] = ((late, seqs[item.id]), item)
        for row, value in zip(rows, values):
            if _ALWAYS in (row.scope, value.get("scope")):
                self._always[row.seq] = (row, value)
                always_changed = True
        if always_changed:
            self._load_always()

    @contextlib.contextmanager
    def exchanged(
        self, changed: Iterable[int], rows: Sequence[Stored]
    ) -> Iterator[None]:
        """This snapshot as :meth:`apply` of ``changed`` and ``rows`` makes
        it, for the block (a recall in it must scan: the recall indexes are
        set aside), then exactly as before, however the block ends: the
        very entries it held put back in the very parts, each part's index
        with them. If this raises, :attr:`half_changed` says whether the
        snapshot may be half changed (then drop it): an error while
        applying (a ``MemoryError`` half way through a part's statistics)
        or while putting back."""
        self.half_changed = True
        touched = set(changed) | {row.seq for row in rows}
        held = sorted(seq for seq in touched if self.parts.has(seq))
        entries = [self.parts.entry(seq) for seq in held]
        skipped = {seq: self._skipped[seq] for seq in touched if seq in self._skipped}
        always, said = dict(self._always), (self.warnings, self.always_skipped)
        aside = self.parts.set_aside()
        self.apply(touched, rows)  # (raising: left half changed)
        try:
            yield
        finally:
            for seq in touched:
                if self.parts.has(seq):
                    self._leave(seq)
                self._skipped.pop(seq, None)
            self.parts.parts_back(aside)
            self._enter(held, entries)
            self._skipped.update(skipped)
            self._always = always
            self.warnings, self.always_skipped = said
            self.parts.indexes_back(aside)
            self.half_changed = False

    def _load_always(self) -> None:
        """The warnings and the always-scope rows not loaded: ``loadable``
        over every always-scope row, in seq order (what it says of them
        does not depend on the other rows)."""
        rows = sorted(self._always.values(), key=lambda item: item[0].seq)
        found = loadable(
            [value for _, value in rows],
            pools=self._pools,
            ids=[row.id for row, _ in rows],
            scopes=[row.scope for row, _ in rows],
        )
        self.warnings = found.warnings
        self.always_skipped = found.always_skipped

    def _enter(self, seqs: Sequence[int], entries: Sequence[dict[str, Any]]) -> None:
        """The one place entries enter the snapshot (the entries, by seq).

        In batches, with no (seq, entry) pair kept per entry: a 10,000-row
        load allocates few objects the garbage collector tracks besides
        those it keeps, and each 700 of them costs a collection."""
        self.parts.enter(zip(seqs, entries))
        # (a quarantined entry's type is no type of the pools': it loads in
        # the quarantine pool, and must not open a spill-over pool)
        self._types.update(
            str(entry_type(entry)) for entry in entries if not is_quarantined(entry)
        )
        if self.space is not None:
            self.space.enter(entries)

    def _leave(self, seq: int) -> None:
        """The one place an entry leaves the snapshot."""
        entry = self.parts.leave(seq)
        if self.space is not None:
            self.space.leave(entry)
        if is_quarantined(entry):
            return
        kind = str(entry_type(entry))
        self._types[kind] -= 1
        if not self._types[kind]:
            del self._types[kind]


def _copied(value: Any) -> Any:
    """A copy of a JSON value (a stored entry is one): new dicts and lists, so
    a caller's edit never reaches the cached snapshot; three times cheaper
    than ``copy.deepcopy``, which a recall paid per entry it returned."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


class _Recalled(Recall):
    """The :class:`Recall` of a store's recall: ``text`` (the frame of
    ``_frame`` and the not-loaded block) and ``pools`` (copies of the chosen
    entries, so that a caller's edit never reaches the snapshot) are made on
    first read, and :meth:`ids` and :meth:`chat_text` read the chosen entries
    themselves. The MCP server's recall reads only those two: the copies
    and the plain render were a tenth of its warm recall at 10,000 entries.

    Reading later gives what reading at once would: the snapshot never
    changes an entry it holds (a changed row enters as a new dict, and the
    ranking and the core are pure), so the chosen entries are the values of
    the moment of the recall.
    """

    _got: Mapping[str, Sequence[dict[str, Any]]]

    def __init__(
        self,
        chosen: Mapping[str, Sequence[dict[str, Any]]],
        snap: _Snapshot,
        caller: str | None = None,
    ) -> None:
        # Recall is frozen: its fields are set as its own __init__ does.
        fields = {
            "_got": chosen,
            "caller": caller,
            "skipped": list(snap.skipped),
            "warnings": list(snap.warnings),
            "always_skipped": list(snap.always_skipped),
            # len(snap.entries) would sort the keys again after every write
            # (benchmarks/README.md, "Figures from code comments").
            "loaded": len(snap),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def _chosen(self) -> Mapping[str, Sequence[dict[str, Any]]]:
        return self._got

    # Fields of Recall, computed once on first read (cached_property writes
    # the instance's __dict__, which the frozen __setattr__ does not guard).
    @functools.cached_property
    def text(self) -> str:
        text = frame(self._chosen, caller=self.caller)
        return text + not_loaded(self.always_skipped)

    @functools.cached_property
    def pools(self) -> dict[str, builtins.list[dict[str, Any]]]:
        return {
            name: [_copied(entry) for entry in entries]
            for name, entries in self._chosen.items()
        }


def _recalled(
    got: Mapping[str, Sequence[dict[str, Any]]],
    snap: _Snapshot,
    caller: str | None = None,
) -> Recall:
    """The :class:`Recall` of a selection from ``snap``, read under the
    store's lock: what was skipped, the warnings, and the chosen entries
    (whose copies and text are made when first read); ``caller``, the
    reader's writer name, is not named in the text."""
    return _Recalled(got, snap, caller)


def _candidate_types(pools: Sequence[Pool] | None) -> builtins.list[str] | None:
    """The types whose rows a snapshot for ``pools`` loads (always-scope
    rows of any type too); None: every type (a pool admits any)."""
    if pools is not None and all(p.types is not None for p in pools):
        return sorted({t for p in pools for t in p.types or ()})
    return None


def _most_changes(snap: _Snapshot) -> int:
    """The most changed rows a snapshot is brought forward by: past that,
    reading the namespace whole is no dearer."""
    return len(snap) + 100


def _load(
    version: object, rows: Sequence[Stored], pools: Sequence[Pool] | None
) -> _Snapshot:
    """A snapshot of these candidate rows, checked by :func:`loadable`."""
    snap = _Snapshot(pools, ranking="core")
    snap.apply((), rows)
    snap.signal = version
    return snap
