"""What makes two entries the same memory, and its digest (stored in the
indexed ``memory_hash`` column of every row).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from poolsplit import default_is_active, entry_type

from ._validate import _content_text


def _same_request(stored: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    fields = ("content", "type", "scope", "tags", "project", "base_priority")
    return all(stored.get(f) == new.get(f) for f in fields)


def _memory(entry: Mapping[str, Any]) -> tuple[str, object, str]:
    """What makes two entries the same memory: type, scope and content with
    its whitespace normalised (the one normalisation rule)."""
    content = " ".join(_content_text(entry).split())
    return (str(entry_type(entry)), entry.get("scope"), content)


def _memory_key(entry: Mapping[str, Any]) -> tuple[str, object, str] | None:
    """The entry's :func:`_memory`, or None for an entry that is not active
    (a retired or inactive entry never loads, so a copy of it is no copy)."""
    if not default_is_active(entry) or entry.get("superseded_by"):
        return None
    return _memory(entry)


def _memory_digest(memory: tuple[str, object, str]) -> str:
    """The digest of a :func:`_memory`, stored in the indexed ``memory_hash``
    column of every row the store writes, so the identical-memory check
    reads only the rows of the same digest (a LIKE over the bodies cost 72
    ms a remember at 100,000 entries). Equal memories have equal digests;
    the check still compares the memories themselves, so a collision can
    never merge two different ones."""
    text = json.dumps(memory, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# The digest of a row whose body is not an entry (it is no memory; an edit
# of the body clears it, and the next check reads the row again).
_NO_MEMORY: Final = "-"
