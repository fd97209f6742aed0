"""Identical memories (the digest of content, type and scope, and the twins
a write finds by it), and the warnings of possible supersedes.
"""

from __future__ import annotations

import builtins
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from ._digests import (
    _NO_MEMORY,
    _memory,
    _memory_digest,
    _memory_key,
)
from ._ranking import Statistics
from ._rows import _parse
from ._snapshot import _Snapshot
from ._stale import near_contents, possible_supersedes, stale_pairs
from ._trust import is_quarantined
from ._types import (
    ADOPTED,
    Change,
    Stored,
    WriteTx,
)
from ._validate import _content_text


def _twins(
    tx: WriteTx, kinds: Sequence[str], digests: Sequence[str], at: str
) -> builtins.list[Stored]:
    """The active rows of ``kinds`` that may be one of the memories of
    ``digests``, in ``seq`` order: those with one of the digests (an index
    probe each) and those without a digest (written by hand, by another
    tool, by 0.1.0, or edited since), which get theirs here, in the write's
    own transaction, so each is read this way once; one whose body the
    history does not hold as its last version is adopted into it, dated
    ``at``, by nobody (``SqlTx.set_digests``)."""
    rows, loose = tx.memories(kinds, digests)
    if loose:
        tx.set_digests(
            [(row, _stored_digest(row)) for row in loose], Change(ADOPTED, None, at)
        )
    return sorted([*rows, *loose], key=lambda row: row.seq)


def _stored_digest(stored: Stored) -> str:
    value = _parse(stored)
    return _memory_digest(_memory(value)) if isinstance(value, dict) else _NO_MEMORY


def _duplicate(
    tx: WriteTx,
    entry: Mapping[str, Any],
    at: str,
    ignore: Iterable[str] = (),
    *,
    vouched: bool = True,
) -> dict[str, Any] | None:
    """The active stored entry that is the same memory as ``entry`` (see
    :func:`_memory_key`), read in the write's own transaction; None if none
    (``at``: the write's time, for a row :func:`_twins` adopts).
    For a ``vouched`` writer a quarantined entry is no twin: what it
    remembers must load in its own pool, not stay in quarantine.

    Reads only the rows :func:`_twins` names (none but the twin, unless
    rows were written without a digest)."""
    key = _memory_key(entry)
    if key is None:
        return None
    skip = set(ignore)
    for stored in _twins(tx, [key[0]], [_memory_digest(key)], at):
        if stored.id in skip:
            continue
        value = _parse(stored)
        if isinstance(value, dict) and _memory_key(value) == key:
            if vouched and is_quarantined(value):
                continue
            return value
    return None


def _stored_memories(
    tx: WriteTx,
    keys: Iterable[tuple[str, object, str] | None],
    ignore: Container[str],
    at: str,
    *,
    vouched: bool = True,
) -> dict[tuple[str, object, str], str]:
    """The active stored entries (not ``ignore``d) that are one of these
    memories, by memory key, for a whole import (see :func:`_twins`; a
    ``vouched`` writer's lines have no quarantined twin)."""
    memories = {key for key in keys if key is not None}
    kinds = sorted({key[0] for key in memories})
    digests = sorted({_memory_digest(key) for key in memories})
    stored: dict[tuple[str, object, str], str] = {}
    for row in _twins(tx, kinds, digests, at) if kinds else ():
        value = _parse(row)
        key = _memory_key(value) if isinstance(value, dict) else None
        # a hand-written row's scope may be a list: never one of the keys
        usable = key is not None and _hashable(key[1]) and row.id not in ignore
        if usable and vouched and isinstance(value, dict) and is_quarantined(value):
            usable = False
        if usable and key in memories:
            stored.setdefault(key, row.id)
    return stored


def _hashable(value: object) -> bool:
    return not isinstance(value, (dict, builtins.list))


def _possible_supersedes(snap: _Snapshot, entry: Mapping[str, Any]) -> list[str]:
    """The ids of the active entries of ``snap`` the rule pairs with
    ``entry`` (``_stale.paired``, with the statistics of its pool): only
    the entries of the contents ``_stale.near_contents`` finds through the
    postings of the entry's rarest terms are compared, which finds what
    comparing every entry of its pool would."""
    part = snap.parts.parts.get(snap.parts.owner(entry))
    if part is None:
        return []
    stats = part.stats
    found = stats.terms_of(_content_text(entry))
    contents = near_contents(found, stats.idf, stats.holders)
    return possible_supersedes(
        entry, part.holding(contents), stats.idf, terms_of=stats.terms_of
    )


def _supersedes_warning(found: Sequence[str]) -> str:
    """The warning of a remember whose memory may replace ``found``."""
    named = ", ".join(repr(ident) for ident in found)
    one = repr(found[0])
    return (
        f"possible_supersedes: {named} look{'s' if len(found) == 1 else ''} like "
        "an earlier version of this memory (same subject, another claim); "
        "nothing was retired. If this memory replaces one, call remember "
        f"again with the same content and supersedes={one} (its id), which "
        "writes nothing new and retires it; next time pass supersedes or "
        "update the old entry"
    )


def _stale_warnings(
    got: Mapping[str, Sequence[Mapping[str, Any]]], snap: _Snapshot
) -> list[str]:
    """A warning per pair of loaded entries the rule pairs (``_stale.py``),
    naming the older and the newer by ``created``. Compares only the few
    loaded entries, by the statistics of their pool."""
    loaded = [entry for entries in got.values() for entry in entries]
    if len(loaded) < 2:
        return []
    parts = snap.parts

    def stats_of(entry: Mapping[str, Any]) -> Statistics:
        part = parts.parts.get(parts.owner(entry))
        return Statistics() if part is None else part.stats

    found = stale_pairs(
        loaded,
        lambda entry: stats_of(entry).idf,
        terms_of=lambda entry: stats_of(entry).terms_of,
    )
    return [
        f"possible_supersedes: {str(old.get('id'))!r} (older) and "
        f"{str(new.get('id'))!r} (newer) look like two versions of one memory "
        "(same subject, another claim); if the newer holds, retire the older "
        f"(forget {str(old.get('id'))!r}), and ask the user when unsure"
        for old, new in found
    ]


def _idempotent(ident: str) -> str:
    """The warning of a write that found its memory already stored."""
    return (
        f"idempotent: an active entry with the same content, type and scope is "
        f"stored as {ident!r}; nothing new was written"
    )
