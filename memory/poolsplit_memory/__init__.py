"""poolsplit-memory: a validated memory store (SQLite or PostgreSQL) for poolsplit.

    from poolsplit_memory import open_store

    with open_store("memory.db", namespace="ada") as store:
        store.remember("Never force-push to main.", type="correction", scope="always")
        print(store.recall("push the release branch").text)

One meaning on both backends (a conformance suite runs against each); see
``poolsplit_memory.store`` for the rules and the decisions behind them.
"""

from __future__ import annotations

from poolsplit_memory.store import (
    DEFAULT_MAX_ENTRY_TOKENS,
    DEFAULT_POOLS,
    MAX_BASE_PRIORITY,
    RANKINGS,
    REMEMBER_DESCRIPTION,
    SPILL_OVER,
    Imported,
    InvalidInput,
    Loadable,
    NotGranted,
    Page,
    Recall,
    Skipped,
    Store,
    StoreError,
    StoreUnavailable,
    Updated,
    Writer,
    Written,
    build_entry,
    check_entry,
    default_pools,
    loadable,
    not_loaded,
    open_store,
)

__all__ = [
    "DEFAULT_MAX_ENTRY_TOKENS",
    "DEFAULT_POOLS",
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
    "loadable",
    "not_loaded",
    "open_store",
]
__version__ = "0.2.0"
