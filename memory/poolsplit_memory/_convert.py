"""Other memory systems' files as poolsplit JSONL (``poolsplit-mcp convert``).

One converter so far, for the MCP reference memory server
(``@modelcontextprotocol/server-memory``): its knowledge graph is a JSONL
file, one object a line, either an entity or a relation::

    {"type":"entity","name":"Ada","entityType":"person","observations":["Prefers tea"]}
    {"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}

>>> lines = [
...     '{"type":"entity","name":"Ada","entityType":"person",'
...     '"observations":["Prefers tea"]}',
...     '{"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}',
... ]
>>> converted = convert_mcp_memory("\\n".join(lines), created="2026-01-05")
>>> [entry["content"] for entry in converted.entries]
['Ada: Prefers tea', 'Ada works at Acme']

Decisions:

- Every observation becomes one ``fact`` (the reference server's own rule:
  an observation is one atomic fact about its entity), its content the
  entity's name, a colon and the observation: an observation is written
  about its entity ("Speaks Spanish"), and a recall matches content words,
  so the name must be in the text. Its tags are the entity's name and its
  ``entityType``, so a recall with ``tags=["Ada"]`` favours what is known
  of Ada.
- Every relation becomes one ``fact`` "from relationType to", the
  relation type's underscores read as spaces ("works_at" is "works at"),
  tagged with both entities' names. The graph's edges are claims like any
  other; ``fact`` puts them in the default ``facts`` pool beside the
  observations they connect. Not the ``entityType`` as poolsplit's type:
  that would scatter one graph over the spill-over pool, type by type.
- An entity without observations becomes one fact saying what it is
  ("Acme: an entity of type organization"), so no entity of the graph is
  lost.
- The file has no dates; every entry gets ``created`` (the caller's: the
  command line passes the file's modification time, when the reference
  server last rewrote it, unless ``--created`` says otherwise). An entry
  without ``created`` would rank as fresh for ever.
- A line that is not JSON, not an object, or an entity or relation
  missing a field is an error naming its line (the reference server skips
  such a line with a note on its stderr; a migration should not lose one
  silently). A line of another ``type`` is left out with a warning
  (:func:`convert_mcp_memory`). No ``id``: ``import`` gives each entry
  one, and the same file converted twice is the same bytes.

This module is the standard library and the core only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import poolsplit

from ._types import InvalidInput

__all__ = ["Converted", "convert_mcp_memory", "to_jsonl"]

# The type every converted observation and relation gets (see the docstring).
FACT: Final = "fact"


class Converted(NamedTuple):
    """The entries a file holds, in its order, and a warning per line left out
    (``line N: why``)."""

    entries: list[dict[str, Any]]
    warnings: list[str]


def convert_mcp_memory(text: str, *, created: str) -> Converted:
    """Convert a reference memory server's knowledge graph (its JSONL file's
    text) to poolsplit entries: one per observation, one per relation, one
    per entity without observations, in the file's order; every entry gets
    ``created``. O(n) in the file's size.

    Lines end at ``"\\n"`` (as the server splits them); blank lines are
    skipped.

    Raises:
        InvalidInput: ``created`` is no timestamp poolsplit reads (field
            ``created``), or a line is not JSON, not an object, or an entity
            or relation with a missing or mistyped field (``line`` set).
    """
    if not isinstance(created, str) or poolsplit.parse_created(created) is None:
        raise InvalidInput(
            "created", f"must be an ISO 8601 date or time, got {created!r}"
        )
    entries: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(None, f"not valid JSON: {exc}", line=number) from None
        except RecursionError:  # json's parser recurses once per level
            raise InvalidInput(
                None, "is nested too deeply to read", line=number
            ) from None
        if not isinstance(item, dict):
            raise InvalidInput(None, "must be a JSON object", line=number)
        kind = item.get("type")
        if kind == "entity":
            entries += _entity(item, number, created)
        elif kind == "relation":
            entries.append(_relation(item, number, created))
        else:
            warnings.append(
                f"line {number}: type {kind!r} is neither 'entity' nor "
                "'relation'; left out"
            )
    return Converted(entries, warnings)


def _text(item: Mapping[str, Any], field: str, number: int) -> str:
    """``item[field]``, a non-blank str, else InvalidInput naming the line."""
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            field, f"must be a non-blank string, got {value!r}", line=number
        )
    return value


def _entity(item: Mapping[str, Any], number: int, created: str) -> list[dict[str, Any]]:
    name = _text(item, "name", number)
    kind = _text(item, "entityType", number)
    observations = item.get("observations", [])
    if not isinstance(observations, list) or not all(
        isinstance(o, str) for o in observations
    ):
        raise InvalidInput("observations", "must be a list of strings", line=number)
    tags = [name] if kind == name else [name, kind]
    said = [o for o in observations if o.strip()]
    if not said:
        return [_fact(f"{name}: an entity of type {kind}", tags, created)]
    return [_fact(f"{name}: {o}", tags, created) for o in said]


def _relation(item: Mapping[str, Any], number: int, created: str) -> dict[str, Any]:
    source = _text(item, "from", number)
    target = _text(item, "to", number)
    verb = " ".join(_text(item, "relationType", number).replace("_", " ").split())
    tags = [source] if source == target else [source, target]
    return _fact(f"{source} {verb} {target}", tags, created)


def _fact(content: str, tags: list[str], created: str) -> dict[str, Any]:
    return {"content": content, "type": FACT, "tags": tags, "created": created}


def to_jsonl(entries: list[dict[str, Any]]) -> str:
    """Entries as JSONL, one compact object a line (keys in the entries'
    order), the text UTF-8 as it is: what ``import`` reads."""
    return "".join(
        json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        for entry in entries
    )
