"""What the store's calls return: Skipped, Written, Updated, Imported, Page,
Recall.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._frame import frame, not_loaded, warnings_section

# ===========================================================================
# Results
# ===========================================================================


@dataclass(frozen=True)
class Skipped:
    """A stored row left out of a recall, and why."""

    id: str
    reason: str


@dataclass(frozen=True)
class Written:
    """What ``remember`` stored: the new id, its warnings and the entry;
    ``possible_supersedes``: the active entries that look like an earlier
    version of it (``_stale.py``; one warning names them), never retired."""

    id: str
    warnings: list[str]
    entry: dict[str, Any]
    possible_supersedes: list[str] = dataclasses.field(default_factory=list)


@dataclass(frozen=True)
class Updated:
    """What ``update`` stored: the whole entry after the change, and warnings."""

    entry: dict[str, Any]
    warnings: list[str]


class Imported(int):
    """What ``import_jsonl`` returns: the count of distinct ids written (an
    int, as before), and ``warnings``: the lines not written because an
    active entry already holds the same memory (``line N: idempotent: ...``)."""

    warnings: list[str]

    def __new__(cls, count: int, warnings: Iterable[str] = ()) -> Imported:
        made = super().__new__(cls, count)
        made.warnings = list(warnings)
        return made


@dataclass(frozen=True)
class Page:
    """One page of ``list``; ``next_cursor`` is None after the last page."""

    entries: list[dict[str, Any]]
    next_cursor: str | None


@dataclass(frozen=True)
class Recall:
    """A recall: the text to inject, the entries per pool, what was left out.

    ``caller`` is the reader's writer name: :meth:`chat_text` names the
    writer of every entry but the caller's own (None: every writer).
    """

    text: str
    pools: dict[str, list[dict[str, Any]]]
    skipped: list[Skipped]
    warnings: list[str]
    # The always-scope rows of ``skipped`` (and those no pool admits), and
    # how many active entries the recall chose from.
    always_skipped: list[Skipped] = dataclasses.field(default_factory=list)
    loaded: int = 0
    caller: str | None = None

    @property
    def _chosen(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """The entries per pool that :meth:`ids` and :meth:`chat_text`
        read: ``pools`` here; in a store's recall, the entries as recalled
        (``pools`` are their copies, made only when read, and a caller's edit
        of them changes neither method)."""
        return self.pools

    def ids(self) -> dict[str, list[str]]:
        """The ids per pool, in pool order."""
        return {
            name: [str(entry.get("id")) for entry in entries]
            for name, entries in self._chosen.items()
        }

    def chat_text(self) -> str:
        """The recall as a chat client shows it to the model: the entries in
        the frame of ``_frame`` (stored data, not instructions), each with
        its id in brackets (``- [id] DATE: content``, so the model can update
        or forget it), the always-scope rows that could not be loaded, every
        warning and every skipped row; a plain sentence when nothing was
        recalled (never "")."""
        text = frame(self._chosen, caller=self.caller, ids=True)
        if not text:
            text = (
                "Nothing is stored in this memory yet.\n"
                if not self.loaded and not self.skipped
                else "No stored memory was selected for this message.\n"
            )
        text += not_loaded(self.always_skipped)
        return text + warnings_section(self.warnings, self.skipped, self.always_skipped)

    def to_dict(self) -> dict[str, Any]:
        """``{"pools": {name: [ids]}, "skipped": [...], "warnings": [...]}``."""
        return {
            "pools": self.ids(),
            "skipped": [{"id": s.id, "reason": s.reason} for s in self.skipped],
            "warnings": list(self.warnings),
        }


def recalled(recall: Recall) -> Mapping[str, Sequence[Mapping[str, Any]]]:
    """The entries per pool as ``recall`` chose them, to read and never
    edit: the package's adapters frame them, where ``Recall.pools`` would
    copy each entry (a copy per entry framed, which a LangGraph turn paid)."""
    return recall._chosen
