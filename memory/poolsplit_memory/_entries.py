"""What the framework adapters share: entries read back by the store's rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from poolsplit import Pool

from poolsplit_memory import default_pools, loadable, not_loaded


class Prepared(NamedTuple):
    """Read entries ready for ``retrieve_pools``, and what was left out."""

    entries: list[dict[str, Any]]
    pools: list[Pool]
    skipped: list[dict[str, str]]  # {"id", "reason"} per skipped value
    notice: str  # names the always-scope ones in the text ("" for none)
    warnings: list[str]


def prepare(
    values: Sequence[object],
    pools: Sequence[Pool] | None,
    *,
    ids: Sequence[str] | None = None,
) -> Prepared:
    """``values`` through :func:`poolsplit_memory.store.loadable`, the store's
    one rule for entries read back, and the pools to fill.

    ``pools`` None means the store's defaults for the loadable entries'
    types (``default_pools``). A bad value is skipped and reported, never
    allowed to stop the turn; an always-scope one is named in ``notice``,
    the block ``Store.recall`` appends to its text. Cost: O(n).
    """
    found = loadable(values, pools=pools, ids=ids)
    chosen = list(pools) if pools is not None else default_pools(found.types)
    skipped = [{"id": s.id, "reason": s.reason} for s in found.skipped]
    return Prepared(
        found.entries,
        chosen,
        skipped,
        not_loaded(found.always_skipped),
        list(found.warnings),
    )
