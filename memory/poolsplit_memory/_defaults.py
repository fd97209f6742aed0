"""The store's defaults and limits: the default pools, the spill-over pool,
the rankings, the remember tool's description, the longest name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from poolsplit import Pool

from ._pooled import Owners, owners

# ===========================================================================
# Constants
# ===========================================================================

DEFAULT_POOLS: Final[tuple[Pool, ...]] = (
    Pool("corrections", 400, 4, ("correction",)),
    Pool("tasks", 600, 4, ("task",)),
    Pool("facts", 400, 4, ("fact",)),
    Pool("skills", 300, 2, ("skill",)),
    Pool("growth", 200, 1, ("growth",)),
    Pool("episodes", 300, 2, ("episode",)),
)
# The spill-over pool's name and caps; its types are the namespace's active
# types that DEFAULT_POOLS do not name, computed per recall.
SPILL_OVER: Final = ("other", 400, 3)
DEFAULT_MAX_ENTRY_TOKENS: Final = 2000
# The largest base_priority a write takes without a warning. In the lexical
# ranking a priority ratio R is worth ln(R) / 30 of relevance (README,
# "Ranking"): 1e6 over the default 5 is worth 0.41, so an entry at the
# bound still loses to one that matches the message much better, and every
# scale people use (1-10, percentages, 1-1000) fits below it. Past about
# 5e13 (5 x e**30) no match of the message can outrank the entry: 1e300
# made one fact the first of every vague recall.
MAX_BASE_PRIORITY: Final = 1_000_000
# How a recall ranks (open_store's ``ranking``): "lexical", the default, is
# the core's signals times a BM25+ relevance over the namespace's statistics
# (_ranking.py); "core" is poolsplit.default_scorer alone; "semantic" (the
# semantic extra) fuses the lexical relevance with e5 vectors (_semantic.py).
RANKINGS: Final = ("lexical", "core", "semantic")


def default_pools(types: Iterable[str]) -> list[Pool]:
    """The pools a store without ``pools=`` recalls with, for these types.

    :data:`DEFAULT_POOLS` (one pool per common type), then the spill-over
    pool ``SPILL_OVER`` admitting every other type given (the namespace's
    active types), so every entry has room of its own kind or the spill-over
    pool's. The store and the adapters both build the defaults here.
    """
    named = {kind for pool in DEFAULT_POOLS for kind in pool.types or ()}
    other = tuple(sorted(set(types) - named))
    return [*DEFAULT_POOLS, Pool(*SPILL_OVER, types=other)]


def pool_owners(pools: Sequence[Pool] | None) -> Owners:
    """The pool each type is ranked in (``_pooled.owners``): for ``pools``,
    the first admitting it; for the default pools (None), its pool in
    :data:`DEFAULT_POOLS`, else the spill-over pool."""
    return owners([*DEFAULT_POOLS, Pool(*SPILL_OVER)] if pools is None else pools)


# The remember tool's description, for the MCP server and the LangGraph tool
# alike: what the model reads before it writes a memory.
REMEMBER_DESCRIPTION: Final = """Save a memory that later turns will see.

Use type "correction" with scope "always" for a rule the user gave you that
must apply on every turn; "task" for open work, "fact" for a durable fact,
"skill" for a how-to, "episode" for what happened. Returns the memory's id
and any warnings about it."""

# Longest namespace, id, key and type (they are indexed columns).
_MAX_NAME: Final = 200
_MAX_PAGE: Final = 500
_ALWAYS: Final = "always"
