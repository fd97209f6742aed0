"""The one rule for entries read back (:func:`loadable`): which load, which
are skipped, and why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import poolsplit
from poolsplit import (
    Pool,
    default_is_active,
)

from ._defaults import _ALWAYS
from ._results import Skipped
from ._rows import _json_kind
from ._trust import QUARANTINED


class Loadable(NamedTuple):
    """What :func:`loadable` found in stored values."""

    entries: list[dict[str, Any]]  # valid, active, admitted by some pool
    types: frozenset[str]  # types of the valid active entries
    skipped: list[Skipped]
    always_skipped: list[Skipped]  # of ``skipped``: the always-scope ones
    warnings: list[str]


@dataclass
class _Skips:
    """The values one :func:`loadable` call leaves out, each named by its id."""

    ids: Sequence[str] | None
    scopes: Sequence[str | None] | None
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    always_skipped: list[Skipped] = dataclasses.field(default_factory=list)

    def ident(self, index: int, value: object) -> str:
        if self.ids is not None:
            return self.ids[index]
        return str(value.get("id")) if isinstance(value, Mapping) else f"#{index}"

    def skip(self, index: int, value: object, reason: str) -> None:
        """Skip a value, in ``always_skipped`` too when its body or its
        scope column says always."""
        item = Skipped(self.ident(index, value), reason)
        self.skipped.append(item)
        scope = value.get("scope") if isinstance(value, Mapping) else None
        if _ALWAYS in (scope, None if self.scopes is None else self.scopes[index]):
            self.always_skipped.append(item)

    def not_admitted(self, index: int, value: object, kind: str) -> str:
        """Name a valid always-scope entry of a type no pool admits in
        ``always_skipped`` (it may be a correction); the warning saying so."""
        self.always_skipped.append(
            Skipped(self.ident(index, value), f"type: no pool admits {kind!r}")
        )
        return (
            f"always-scope entry {self.ident(index, value)!r} has type "
            f"{kind!r}, which no pool admits; it is not loaded"
        )


def _active_objects(
    values: Sequence[object], skips: _Skips
) -> tuple[list[int], list[dict[str, Any]]]:
    """The indexes of the active entries among ``values``, and the entries
    (two lists: no pair to allocate per row); a value that cannot be an
    entry at all (:func:`_unreadable`) is skipped."""
    indexes: list[int] = []
    parsed: list[dict[str, Any]] = []
    for index, value in enumerate(values):
        reason = _unreadable(value)
        if reason is not None:
            skips.skip(index, value if isinstance(value, Mapping) else None, reason)
        elif isinstance(value, dict):  # a parsed row (no ABC check)
            if default_is_active(value):
                indexes.append(index)
                parsed.append(value)
        elif isinstance(value, Mapping) and default_is_active(value):
            indexes.append(index)
            parsed.append(dict(value))
    return indexes, parsed


def _validation(
    entries: Sequence[Mapping[str, Any]],
) -> tuple[dict[int, list[str]], list[str]]:
    """``poolsplit.validate``'s errors per position (each skips its entry),
    and its warnings about the scope of an always-scope entry."""
    reasons: dict[int, list[str]] = {}
    warnings: list[str] = []
    for problem in poolsplit.validate(entries):
        if problem.severity == "error":
            reasons.setdefault(problem.index, []).append(
                f"{problem.field}: {problem.message}"
            )
        elif (
            problem.field == "scope" and entries[problem.index].get("scope") == _ALWAYS
        ):
            warnings.append(f"scope: {problem.message}")
    return reasons, warnings


def _admitted_types(pools: Sequence[Pool] | None) -> frozenset[str] | None:
    """The types ``pools`` admit; None when none are given or one admits all."""
    if pools is not None and all(p.types is not None for p in pools):
        return frozenset(t for p in pools for t in p.types or ())
    return None


def loadable(
    values: Sequence[object],
    *,
    pools: Sequence[Pool] | None = None,
    ids: Sequence[str] | None = None,
    scopes: Sequence[str | None] | None = None,
) -> Loadable:
    """The one rule for entries read back: which can load, which are skipped.

    Used by ``Store.recall`` and the framework adapters. A value that is not
    an object (or is the ``{"id", "unreadable"}`` marker of ``get``/``list``),
    has a ``type`` that is not a str, or fails ``poolsplit.validate`` is
    skipped with its reason, never fatal to the other entries; an
    always-scope one (by its body or by ``scopes``, the storage's scope
    column) is also in ``always_skipped``, for :func:`not_loaded`. Inactive
    entries are left out silently. With ``pools`` that all name types, an
    entry of a type none admits is left out; an always-scope one is warned
    about and, as it may be a correction, also in ``always_skipped`` (named
    in the text, not in ``skipped``: the row itself is valid). ``ids``
    names each value in reports (default: its ``id``). Cost: O(n).
    """
    skips = _Skips(ids, scopes)
    indexes, parsed = _active_objects(values, skips)
    reasons, warnings = _validation(parsed)
    admitted = _admitted_types(pools)
    entries = []
    types = set()
    for position, index in enumerate(indexes):
        value = parsed[position]
        if position in reasons:
            skips.skip(index, value, "; ".join(reasons[position]))
            continue
        if value.get(QUARANTINED) is True and value.get("scope") == _ALWAYS:
            skips.skip(index, value, _QUARANTINED_ALWAYS)
            continue
        kind = str(poolsplit.entry_type(value))  # a str: _unreadable checked it
        types.add(kind)
        if admitted is not None and kind not in admitted:
            if value.get("scope") == _ALWAYS:
                warnings.append(skips.not_admitted(index, value, kind))
            continue
        entries.append(value)
    return Loadable(
        entries, frozenset(types), skips.skipped, skips.always_skipped, warnings
    )


_QUARANTINED_ALWAYS: Final = (
    "scope: a quarantined entry (its writer is not vouched for) is never "
    "always-scope; a writer holding pin must update it to vouch for it"
)


def _unreadable(value: object) -> str | None:
    """Why a stored value cannot be an entry at all, or None."""
    # (type() first: a parsed row is a dict, and the ABC check costs more)
    if not (type(value) is dict or isinstance(value, Mapping)):
        return f"must be a JSON object, got {_kind_of(value)}"
    # the marker of get/list, {"id", "unreadable"} (no set built per row)
    if len(value) == 2 and "id" in value and "unreadable" in value:
        return str(value["unreadable"])
    if not isinstance(poolsplit.entry_type(value), str):
        return f"type: must be a str, got {type(value['type']).__name__}"
    return None


def _kind_of(value: object) -> str:
    if isinstance(value, (list, str, bool, int, float)) or value is None:
        return _json_kind(value)
    return type(value).__name__
