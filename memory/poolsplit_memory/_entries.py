"""What the framework adapters share: which read entries can be used."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from poolsplit import Pool, default_is_active, validate

from poolsplit_memory import default_pools


def pools_for(pools: Sequence[Pool] | None, entries: list[Any]) -> list[Pool]:
    """``pools``, or when None the store's defaults for these entries.

    The defaults are ``Store.recall``'s: ``DEFAULT_POOLS`` (one pool per
    common type), then the spill-over pool ``SPILL_OVER`` admitting every
    other type of an active entry, so no entry is left without a pool. Never
    the demo's pools.
    """
    if pools is not None:
        return list(pools)
    return default_pools(
        kind
        for kind in (
            entry.get("type", "note")
            for entry in entries
            if isinstance(entry, Mapping) and default_is_active(entry)
        )
        if isinstance(kind, str)
    )


def loadable(values: list[Any]) -> tuple[list[Any], list[dict[str, str]]]:
    """The values retrieval can use, and the others as ``{"id", "reason"}``.

    A stored item in which ``poolsplit.validate`` finds an error (written by
    hand, by another tool, by an older version) is left out of this turn and
    reported, never allowed to stop every later turn. A row ``Store.list``
    could not parse comes as ``{"id", "unreadable": reason}`` and is
    reported with that reason. A report carries ``"scope"``: ``"always"``
    for an always-scope entry, ``"unknown"`` for an unparseable row (it may
    be a correction), so the caller names both in the text the model reads
    (:func:`notice`). Cost: O(n).
    """
    errors = {index: str(value["unreadable"]) for index, value in _unreadable(values)}
    for problem in validate(values):
        if problem.severity == "error" and problem.index not in errors:
            where = f"{problem.field}: " if problem.field else ""
            errors[problem.index] = where + problem.message
    if not errors:
        return values, []
    kept = [value for index, value in enumerate(values) if index not in errors]
    skipped = []
    for index, reason in errors.items():
        value = values[index]
        entry: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        report = {"id": str(entry.get("id")), "reason": reason}
        if entry.get("scope") == "always":
            report["scope"] = "always"
        elif "unreadable" in entry and "content" not in entry:
            report["scope"] = "unknown"
        skipped.append(report)
    return kept, skipped


def _unreadable(values: list[Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """The ``{"id", "unreadable"}`` markers of rows ``Store.list`` could not
    parse, with their positions."""
    return [
        (index, value)
        for index, value in enumerate(values)
        if isinstance(value, Mapping)
        and "unreadable" in value
        and "content" not in value
    ]


def notice(skipped: list[dict[str, str]]) -> str:
    """The block naming the entries that could not be loaded and may be
    corrections: always-scope ones, and unparseable rows (scope unknown).

    Worded as ``Store.recall``'s, so the model reads one form whichever way
    the entries were stored; "" when there is none.
    """
    kinds = {"always": "always-scope entry", "unknown": "entry (scope unknown)"}
    lines = [
        f"- {kinds[s['scope']]} {s['id']!r} could not be loaded ({s['reason']}); "
        "fix or forget it"
        for s in skipped
        if s.get("scope") in kinds
    ]
    return "\n## Not loaded\n" + "\n".join(lines) + "\n" if lines else ""
