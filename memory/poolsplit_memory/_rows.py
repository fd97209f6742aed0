"""Rows: how an entry becomes columns, and how a stored body is read back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from poolsplit import default_is_active, entry_type

from ._digests import (
    _memory,
    _memory_digest,
)
from ._trust import WRITTEN_BY
from ._types import (
    Row,
    Stored,
)

# ===========================================================================
# Rows: how an entry becomes columns, and how a stored body is read back
# ===========================================================================


def _dumps(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _columns(entry: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """The type, status and scope columns a write puts beside a body (the
    candidate query filters on them; ``as_of`` reads them from the body)."""
    return (
        str(entry_type(entry)),
        "active" if default_is_active(entry) else "inactive",
        entry.get("scope") if isinstance(entry.get("scope"), str) else None,
    )


def _row(entry: Mapping[str, Any]) -> Row:
    """The indexed columns beside the JSON body (the body is the entry)."""
    retired = entry.get("superseded_by")
    kind, status, scope = _columns(entry)
    return Row(
        id=str(entry["id"]),
        type=kind,
        status=status,
        scope=scope,
        superseded_by=retired if isinstance(retired, str) and retired else None,
        body=_dumps(entry),
        memory_hash=_memory_digest(_memory(entry)),
        written_by=_text_or_none(entry.get(WRITTEN_BY)),
    )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _parse(stored: Stored) -> dict[str, Any] | str:
    """The stored entry, or the reason it cannot be read as one.

    The row's id is the entry's id: a body (written by hand) whose ``id`` is
    missing or differs is read with the row's, the one get, update and
    forget take and recall reports."""
    try:
        value = _loads(stored.body)
    except ValueError as exc:
        return f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return f"must be a JSON object, got {_json_kind(value)}"
    if value.get("id") != stored.id:
        value["id"] = stored.id
    return value


_raw_decode: Final = json.JSONDecoder().raw_decode


def _loads(body: str) -> Any:
    """``json.loads(body)``: the same value, or the same error.

    A body that is one JSON value from its first character to its last
    (every body the store writes) is decoded by ``raw_decode`` (json.loads'
    own decoder, without its whitespace and BOM checks around it: half its
    cost, benchmarks/README.md "Figures from code comments"); any other
    body by ``json.loads``.
    """
    if type(body) is str:
        try:
            value, end = _raw_decode(body)
        except ValueError:
            pass
        else:
            if end == len(body):
                return value
    return json.loads(body)


def _json_kind(value: object) -> str:
    names = {list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _readable(stored: Stored) -> dict[str, Any]:
    """What get/list show: the entry, or a marker naming why it is unreadable."""
    value = _parse(stored)
    return value if isinstance(value, dict) else {"id": stored.id, "unreadable": value}
