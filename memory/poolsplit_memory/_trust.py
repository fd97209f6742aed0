"""Trust: who writes, what they may do, and what the store stamps (issue 51).

A store acts for one :class:`Writer`: a name (stamped on what it writes)
and two grants.

- ``pin``: may write or change always-scope entries (they load on every
  recall, outside every cap, so whoever writes them steers every reader's
  context). A Python store and the stdio server act for their one user and
  hold it; over ``--http`` a token holds it only when granted (``token add
  ... --pin``, the OAuth scope ``poolsplit-pin:NS``).
- ``quarantine``: the writer is not vouched for (an agent that reads the
  web, a bot, a new teammate). What it writes is stamped ``quarantined``
  and loads only in the quarantine pool (:data:`QUARANTINE`: by default at
  most :data:`QUARANTINE_ENTRIES` entries and :data:`QUARANTINE_TOKENS`
  tokens a recall), whatever it matches; it never holds ``pin``.

Provenance is stamped by the store, never taken from a client: every
entry written through a store carries :data:`WRITTEN_BY` and
:data:`WRITTEN_AT` (the server's clock, UTC, ISO 8601), and after a change
:data:`UPDATED_BY` and :data:`UPDATED_AT`; an entry a quarantined writer
wrote or last changed carries ``quarantined: true``. Rows written before
poolsplit-memory 0.3 have none of these: they read as ``written_by`` null,
never an invented name.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from poolsplit import Pool

from ._types import InvalidInput

__all__ = [
    "PROVENANCE",
    "QUARANTINE",
    "QUARANTINED",
    "QUARANTINE_ENTRIES",
    "QUARANTINE_TOKENS",
    "UPDATED_AT",
    "UPDATED_BY",
    "WRITTEN_AT",
    "WRITTEN_BY",
    "Writer",
    "default_writer_name",
    "is_quarantined",
    "split_quarantine",
]

WRITTEN_BY: Final = "written_by"
WRITTEN_AT: Final = "written_at"
UPDATED_BY: Final = "updated_by"
UPDATED_AT: Final = "updated_at"
QUARANTINED: Final = "quarantined"
# The fields only the store writes: a client's value for any is refused
# (remember, update) or replaced (import_jsonl without keep_provenance).
PROVENANCE: Final = (WRITTEN_BY, WRITTEN_AT, UPDATED_BY, UPDATED_AT, QUARANTINED)

# The quarantine pool: its name (a pool of that name in a store's pools
# sizes it; else these defaults) and its default caps.
QUARANTINE: Final = "quarantine"
QUARANTINE_ENTRIES: Final = 2
QUARANTINE_TOKENS: Final = 200


def default_writer_name() -> str:
    """The OS user's name (``getpass.getuser``), else ``uid:N``."""
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


@dataclass(frozen=True)
class Writer:
    """Who a store acts for: the name it stamps, and its grants.

    ``Writer("ada")`` holds every grant but quarantine (a person's own
    store); a quarantined writer never holds ``pin`` (``pin`` left out
    means: unless quarantined).
    """

    name: str
    pin: bool = None  # type: ignore[assignment]  # None: not quarantine
    quarantine: bool = False

    def __post_init__(self) -> None:
        if self.pin is None:
            object.__setattr__(self, "pin", not self.quarantine)
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInput("writer", f"must be a non-blank str, got {self.name!r}")
        if self.pin and self.quarantine:
            raise InvalidInput(
                "writer", f"{self.name!r}: a quarantined writer cannot hold pin"
            )


def is_quarantined(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` loads only in the quarantine pool (the one test)."""
    return entry.get(QUARANTINED) is True


def split_quarantine(
    pools: Sequence[Pool] | None,
) -> tuple[tuple[Pool, ...] | None, Pool]:
    """The pools that take entries by type, and the quarantine pool: the
    pool named :data:`QUARANTINE` among ``pools`` (it holds quarantined
    entries whatever their type, so it names no types), else one of the
    default caps. ``pools`` None stays None (the store's default pools).

    Raises:
        InvalidInput: a pool named ``quarantine`` that names types.
    """
    chosen = Pool(QUARANTINE, QUARANTINE_TOKENS, QUARANTINE_ENTRIES)
    if pools is None:
        return None, chosen
    regular = []
    for pool in pools:
        if pool.name != QUARANTINE:
            regular.append(pool)
            continue
        if pool.types is not None:
            raise InvalidInput(
                "pools",
                f"pool {QUARANTINE!r} holds the entries of quarantined writers, "
                "whatever their type: leave out its types (it is sized by "
                "max_tokens and max_entries only)",
            )
        chosen = pool
    return tuple(regular), chosen
