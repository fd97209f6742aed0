"""The candidates of a namespace as they were at a past time T (``as_of``).

The rule (:func:`rows_then`). An id is *changed since T* when it has a
version after T, or its row has no history at all, or no ``memory_hash``
(the store writes one with every body it writes, and appends a body
another tool wrote to the history, ``adopted``, when it gives it one:
``SqlTx.set_digests``; any change of a body clears it). So a row with a
digest and a history is its id's last version. The row of an id not
changed since T is read as the entries table holds it now (its columns
too: what another tool changed in them in place, without a version, is
taken as it is now). A changed id is read from the history: its last
version at or before T, when that has a body (a tombstone has none; nor
has any version of an entry forgotten since: forgetting wins over
history), with the seq its row had then, filtered as
``SqlTx.candidates`` filters rows (active; of the pools' types, or
always-scope) by the columns its body gives.

Two ways to the snapshot of those candidates, one rule: :func:`built`
loads them into a new snapshot (from every candidate row now), and
:func:`derived` brings the store's current snapshot back to T by the
changed ids alone, for one recall or explain, then back as it was (the
cheaper one while few changed since T). A property test holds the two
equal, and both to a recall made at T.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from poolsplit import Pool

from ._rows import _columns, _parse
from ._snapshot import _candidate_types, _Snapshot
from ._sql import candidate
from ._types import Past, Stored

# Derived while at most this share of a snapshot's entries changed since T:
# each changed id costs the derived way two changes of the snapshot (back
# to T, then forward), a snapshot of its own one load of every entry. With
# a tenth changed, derived costs x0.27 of built (benchmarks/README.md,
# "History and as_of"); the crossing point is not measured: a half is a
# bound on the work, not a measured optimum.
DERIVE_AT_MOST = 0.5


def _kinds(pools: Sequence[Pool] | None) -> frozenset[str] | None:
    types = _candidate_types(pools)
    return None if types is None else frozenset(types)


def versions_then(past: Past, pools: Sequence[Pool] | None) -> list[Stored]:
    """The candidates among the versions at T of the ids that changed since:
    filtered by the columns their bodies give (what a write of that body
    stores); a body that is not an object is kept (recall names it
    skipped)."""
    kinds = _kinds(pools)
    rows = []
    for stored in past.then:
        value = _parse(stored)
        if not isinstance(value, dict):
            rows.append(stored)
            continue
        kind, status, scope = _columns(value)
        if candidate(status, kind, scope, kinds):
            rows.append(stored._replace(scope=scope))
    return rows


def rows_then(
    past: Past, pools: Sequence[Pool] | None, candidates: Sequence[Stored]
) -> list[Stored]:
    """The rule written plainly: the candidate rows at T, from every
    candidate row now (``candidates``, read in the transaction that read
    ``past``), in seq order."""
    kept = [row for row in candidates if row.id not in past.changed]
    return sorted(kept + versions_then(past, pools), key=lambda row: row.seq)


def built(
    past: Past,
    pools: Sequence[Pool] | None,
    ranking: str,
    candidates: Sequence[Stored],
) -> _Snapshot:
    """A new snapshot of the candidates at T (:func:`rows_then`)."""
    snap = _Snapshot(pools, ranking=ranking)
    snap.apply((), rows_then(past, pools, candidates))
    return snap


def derives(past: Past, snap: _Snapshot) -> bool:
    """Whether :func:`derived` is the cheaper way for ``snap``."""
    return len(past.changed) <= DERIVE_AT_MOST * max(len(snap), 1)


@contextmanager
def derived(
    snap: _Snapshot,
    past: Past,
    pools: Sequence[Pool] | None,
    drop: Callable[[], None],
) -> Iterator[_Snapshot]:
    """``snap`` (the current snapshot of ``pools``, at the change-log
    position ``past`` was read at) brought back to T for the block, then
    exactly as it was (``_Snapshot.exchanged``: a recall in the block must
    scan); the caller holds the store's lock. If that raises, ``drop``
    takes the snapshot out of the cache (it may be half changed) before the
    error propagates."""
    try:
        with snap.exchanged(past.gone, versions_then(past, pools)):
            yield snap
    except BaseException:
        if snap.half_changed:
            drop()
        raise
