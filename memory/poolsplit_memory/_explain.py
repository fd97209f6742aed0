"""What ``Store.explain`` adds to ``poolsplit.explain``'s table: its filters,
the relevance and provenance lines, the closing lines.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import poolsplit
from poolsplit import Pool

from ._ranking import (
    RELEVANCE_RATE,
    TIME_FACTOR,
    Relevance,
    terms,
)
from ._results import Skipped
from ._snapshot import _Snapshot
from ._trust import (
    QUARANTINE,
    UPDATED_AT,
    UPDATED_BY,
    WRITTEN_AT,
    WRITTEN_BY,
    is_quarantined,
)
from ._types import InvalidInput
from ._validate import _content_text


def _explain_filters(
    ids: Iterable[str] | None,
    types: Iterable[str] | None,
    outcomes: Iterable[str] | None,
    summary: object,
) -> dict[str, builtins.list[str] | None]:
    """``explain``'s filters checked (InvalidInput naming the bad one); an
    outcome is read in any case, as the names cannot be confused."""
    filters = {
        "ids": _filter("ids", ids),
        "types": _filter("types", types),
        "outcomes": _filter("outcomes", outcomes),
    }
    if filters["outcomes"] is not None:  # any case: "Selected" is selected
        known = {o.casefold(): o for o in poolsplit.OUTCOMES}
        filters["outcomes"] = [
            known.get(o.strip().casefold(), o) for o in filters["outcomes"]
        ]
    unknown = [o for o in filters["outcomes"] or () if o not in poolsplit.OUTCOMES]
    if unknown:
        raise InvalidInput(
            "outcomes",
            f"must be among {', '.join(poolsplit.OUTCOMES)}, got {unknown[0]!r}",
        )
    if type(summary) is not bool:
        raise InvalidInput("summary", f"must be a bool, got {summary!r}")
    return filters


def _filter(field: str, values: Iterable[str] | None) -> builtins.list[str] | None:
    """An explain filter: None, or a list of str (not a bare str)."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInput(
            field, f"must be a list of str or None, got {type(values).__name__}"
        )
    chosen = list(values)
    for value in chosen:
        if not isinstance(value, str):
            raise InvalidInput(
                field, f"must contain only str, got {type(value).__name__} {value!r}"
            )
    return chosen


_RELEVANCE_ROWS: Final = 20


def _unmatched_note(relevance: Relevance) -> str:
    """What explain says of a pool the message matches nowhere."""
    if relevance.unmatched == 0.0:
        return ""
    if relevance.windows:  # a time alone, or no term held: the window orders
        return f" (no match: x1, x{TIME_FACTOR:g} in the message's time)"
    return " (no match: all x1)"


def _provenance_lines(
    reports: Sequence[tuple[poolsplit.Explanation, Sequence[dict[str, Any]]]],
    summary: bool,
) -> str:
    """Who wrote the entries explain reports on (``written_by``, as the
    store stamped it): a count per writer, and with rows (not ``summary``)
    each reported entry's writer and last change, at most 20."""
    counts: collections.Counter[str] = collections.Counter()
    rows = []
    for report, entries in reports:
        for entry in entries:
            who = entry.get(WRITTEN_BY)
            name = who if isinstance(who, str) else "(not recorded)"
            counts[name + (" (quarantined)" if is_quarantined(entry) else "")] += 1
        for decision in () if summary else report.decisions:
            entry = entries[decision.index]
            by, at = entry.get(WRITTEN_BY), entry.get(WRITTEN_AT)
            line = f"- {decision.id}: written by {by} at {at}"
            if entry.get(UPDATED_BY) is not None:
                line += (
                    f", changed by {entry.get(UPDATED_BY)} at {entry.get(UPDATED_AT)}"
                )
            rows.append(line)
    if not counts:
        return ""
    text = "writers: " + ", ".join(f"{name} {n}" for name, n in counts.most_common())
    shown = rows[:_RELEVANCE_ROWS]
    if len(rows) > len(shown):
        shown.append(f"- and {len(rows) - len(shown)} more")
    return "\n".join([text, *shown]) + "\n"


_QUARANTINE_HEAD: Final = (
    f"\n{QUARANTINE}: the entries of writers nobody vouched for, whatever "
    "their type, in a pool of their own\n"
)


def _explained_parts(
    snap: _Snapshot, pools: Sequence[Pool]
) -> builtins.list[tuple[builtins.list[Pool], builtins.list[dict[str, Any]]]]:
    """What explain reports on, as recall fills it: the pools that take
    entries by type over every entry but the quarantined, then (when the
    snapshot holds any) the quarantine pool over the quarantined alone."""
    typed = [pool for pool in pools if pool.name != QUARANTINE]
    parts = [(typed, snap.parts.routed())]
    for pool in pools:
        if pool.name == QUARANTINE:
            whole = dataclasses.replace(pool, types=None)
            parts.append(([whole], snap.parts.part_entries(QUARANTINE)))
    return parts


def _relevance_lines(
    relevances: Mapping[str | None, Relevance],
    snap: _Snapshot,
    reports: Sequence[tuple[poolsplit.Explanation, Sequence[dict[str, Any]]]],
) -> str:
    """Each pool's best ``r`` (semantic: ``w``), then the relevance factor of
    the entries explain reports that have one above 0 (every other entry's
    is its pool's ``unmatched``), best first, at most 20."""
    rows = []
    owner = snap.parts.owner
    for report, entries in reports:
        for decision in report.decisions:
            entry = entries[decision.index]
            relevance = relevances[owner(entry)]
            if relevance.share(entry) > 0.0:
                factor = relevance.factor(entry)
                shared = relevance.weights.keys() & terms(_content_text(entry))
                rows.append((-factor, str(decision.id), ", ".join(sorted(shared))))
    rows.sort()
    first = next(iter(relevances.values()))
    s, floor = first.symbol, first.floor  # r, or the semantic ranking's w
    order = [
        pool.name
        for report, _ in reports
        for pool in report.pools
        if pool.name in relevances
    ]
    bests = ", ".join(
        f"{name} {relevances[name].best:.3f}" + _unmatched_note(relevances[name])
        for name in order
    )
    lines = [
        f"\nrelevance, score = base x g({s}): exp({RELEVANCE_RATE:g} x {s}), 0 "
        f"below {floor:g} x the best {s} of the entry's pool (each pool its "
        f"own; the best {s}: {bests}); {len(rows)} entries with {s} > 0 (the "
        "others: x0, or x1 in a pool the message matches nowhere), with "
        "their shared terms"
    ]
    if any(relevance.windows for relevance in relevances.values()):
        lines.append(
            f"an entry created in the time the message names: x{TIME_FACTOR:g} "
            "more, and never below the floor"
        )
    lines += [
        f"- {ident}: x{-f:.4g} ({shared or 'no shared term'})"
        for f, ident, shared in rows[:_RELEVANCE_ROWS]
    ]
    if len(rows) > _RELEVANCE_ROWS:
        lines.append(f"- and {len(rows) - _RELEVANCE_ROWS} more")
    return "\n".join(lines) + "\n"


def _explain_tail(
    unused: Sequence[str], skipped: Sequence[Skipped], summary: bool
) -> str:
    """explain's closing lines: the default pools left out, the rows skipped."""
    text = ""
    if unused:
        text += f"default pools with no entry yet (not shown): {', '.join(unused)}\n"
    if skipped and summary:
        text += f"\nrows left out: {len(skipped)} (summary=False lists them)\n"
    elif skipped:
        lines = [f"- {s.id}: {s.reason}" for s in skipped]
        text += "\nrows left out:\n" + "\n".join(lines) + "\n"
    return text
