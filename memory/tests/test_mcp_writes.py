"""The store's write path behind the MCP tools, on both backends (issue 26).

Identical memories stored once (remember, import_jsonl), update into a
duplicate refused, import_jsonl's superseded_by checked line by line, a
deeply nested line refused with a message, explain's filters and the default
pools' health, list cursors bound to their namespace. The expectations come
from memory/README.md, not from the store's code.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import pytest
from test_frame import LEAD

from poolsplit_memory import Imported, InvalidInput

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def jsonl(*entries) -> io.StringIO:
    return io.StringIO("".join(json.dumps(e) + "\n" for e in entries))


def everything(store):
    entries, cursor = [], None
    for _ in range(1000):
        page = store.list(limit=500, cursor=cursor)
        entries.extend(page.entries)
        cursor = page.next_cursor
        if cursor is None:
            return entries
    raise AssertionError("list never ended")


# --- identical memories -----------------------------------------------------


@pytest.mark.parametrize(
    "again",
    [
        "Never deploy on Fridays.",
        "  Never deploy\ton\n Fridays. ",
        "Never  deploy on Fridays.",
    ],
    ids=["same", "tabs-and-newlines", "double-space"],
)
def test_the_same_memory_is_stored_once_with_an_idempotent_warning(open_, again):
    store = open_("ada")
    first = store.remember(
        "Never deploy on Fridays.", type="correction", scope="always", now=NOW
    )
    second = store.remember(again, type="correction", scope="always", now=NOW)
    assert second.id == first.id
    assert second.warnings[-1].startswith("idempotent:")
    assert first.id in second.warnings[-1]
    assert len(everything(store)) == 1
    assert store.recall("deploy", now=NOW).text.count("Never deploy") == 1


@pytest.mark.parametrize(
    ("content", "kind", "scope"),
    [
        ("Never deploy on fridays.", "correction", "always"),  # case differs
        ("Never deploy on Fridays.", "fact", "always"),
        ("Never deploy on Fridays.", "correction", None),
    ],
    ids=["case", "type", "scope"],
)
def test_another_content_type_or_scope_is_another_memory(open_, content, kind, scope):
    store = open_("ada")
    first = store.remember(
        "Never deploy on Fridays.", type="correction", scope="always", now=NOW
    )
    other = store.remember(content, type=kind, scope=scope, now=NOW)
    assert other.id != first.id
    assert not any(w.startswith("idempotent") for w in other.warnings)


def test_a_retired_or_forgotten_memory_may_be_written_again(open_):
    store = open_("ada")
    old = store.remember("ship on Mondays", type="fact", now=NOW)
    store.remember("ship on Tuesdays", type="fact", supersedes=old.id, now=NOW)
    again = store.remember("ship on Mondays", type="fact", now=NOW)
    assert again.id != old.id and again.warnings == []
    assert store.forget(again.id)
    third = store.remember("ship on Mondays", type="fact", now=NOW)
    assert third.id not in (old.id, again.id)


def test_the_same_memory_in_another_namespace_is_written(open_):
    a, b = open_("ada"), open_("bob")
    first = a.remember("tea at four", type="fact", now=NOW)
    other = b.remember("tea at four", type="fact", now=NOW)
    assert other.id != first.id and other.warnings == []


def test_supersedes_into_a_stored_memory_retires_the_old_one_in_its_favour(open_):
    store = open_("ada")
    kept = store.remember("use the staging queue", type="fact", now=NOW)
    old = store.remember("use the old queue", type="fact", now=NOW)
    again = store.remember(
        "use the staging queue", type="fact", supersedes=old.id, now=NOW
    )
    assert again.id == kept.id
    assert store.get(old.id)["superseded_by"] == kept.id
    assert len(everything(store)) == 2


def test_update_into_a_duplicate_is_refused_naming_the_other_entry(open_):
    store = open_("ada")
    one = store.remember("alpha", type="fact", now=NOW)
    two = store.remember("beta", type="fact", now=NOW)
    with pytest.raises(InvalidInput) as info:
        store.update(two.id, content=" alpha ")
    assert info.value.field == "content"
    assert one.id in str(info.value)
    assert store.get(two.id)["content"] == "beta"
    assert store.update(two.id, content="alpha", type="task").entry["type"] == "task"


def test_import_skips_a_line_that_repeats_a_stored_memory(open_):
    store = open_("ada")
    kept = store.remember("billing runs nightly", type="fact", now=NOW)
    source = jsonl(
        {"id": "x1", "type": "fact", "content": "billing  runs nightly"},
        {"id": "x2", "type": "fact", "content": "new", "superseded_by": "x3"},
        {"id": "x3", "type": "fact", "content": "newer"},
        {"id": "x4", "type": "fact", "content": "stale", "superseded_by": "x1"},
    )
    count = store.import_jsonl(source)
    assert isinstance(count, Imported) and count == 3
    [warning] = count.warnings
    assert warning.startswith("line 1: idempotent:") and kept.id in warning
    assert store.get("x1") is None
    assert store.get("x4")["superseded_by"] == kept.id  # pointed at the kept one
    assert (
        store.import_jsonl(jsonl({"content": "billing runs nightly", "type": "fact"}))
        == 0
    )


def test_import_keeps_a_files_own_repeated_lines(open_):
    """A backup is restored as it was written: its lines are not compared."""
    store = open_("ada")
    lines = [{"id": f"c{n}", "type": "note", "content": "same"} for n in range(3)]
    assert store.import_jsonl(jsonl(*lines)) == 3


# --- import_jsonl's superseded_by, line by line -----------------------------


def test_a_line_that_retires_itself_is_named_for_what_it_is(open_):
    store = open_("ada")
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(
            jsonl(
                {"id": "a", "type": "correction", "content": "x", "superseded_by": "a"}
            )
        )
    assert info.value.field == "superseded_by" and info.value.line == 1
    assert "retire itself" in str(info.value)
    assert "is not an entry" not in str(info.value)
    assert everything(store) == []


def test_a_self_retiring_line_is_refused_beside_another_line_with_its_target(open_):
    """Two lines naming one target: each is checked (the first one retires
    itself and would never load)."""
    store = open_("ada")
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(
            jsonl(
                {"id": "a", "type": "correction", "content": "x", "superseded_by": "a"},
                {"id": "b", "type": "correction", "content": "y", "superseded_by": "a"},
            )
        )
    assert info.value.line == 1 and info.value.id == "a"
    assert "retire itself" in str(info.value)
    assert everything(store) == []


@pytest.mark.parametrize("depth", [101, 5000])
def test_a_deeply_nested_line_is_refused_with_a_message(open_, depth):
    store = open_("ada")
    nested = "[" * depth + "]" * depth
    source = io.StringIO('{"content": "x", "extra": ' + nested + "}\n")
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(source)
    assert info.value.line == 1
    assert "nested" in str(info.value)
    assert everything(store) == []


def test_nesting_within_the_limit_is_stored(open_):
    store = open_("ada")
    nested = "[" * 99 + "]" * 99
    assert store.import_jsonl(
        io.StringIO('{"content": "x", "extra": ' + nested + "}\n")
    )


# --- explain ----------------------------------------------------------------


def test_the_default_pools_explain_as_healthy_on_a_healthy_store(open_):
    store = open_("ada")
    store.remember("Never deploy on Fridays.", type="correction", scope="always")
    store.remember("billing runs nightly", type="fact")
    for summary in (False, True):
        table = store.explain("deploy", summary=summary)
        assert "warning" not in table, table
        assert "default pools with no entry yet (not shown): tasks" in table


def test_explain_filters_and_summary(open_):
    store = open_("ada")
    rule = store.remember("Never deploy on Fridays.", type="correction", scope="always")
    fact = store.remember("billing runs nightly", type="fact")
    only = store.explain("x", ids=[fact.id])
    assert fact.id in only and rule.id not in only
    typed = store.explain("x", types=["correction"])
    assert rule.id in typed and fact.id not in typed
    chosen = store.explain("x", outcomes=["always"])
    assert rule.id in chosen and fact.id not in chosen
    short = store.explain("x", summary=True)
    assert rule.id not in short and "outcomes: always 1, selected 1" in short
    for bad in ({"outcomes": ["chosen"]}, {"ids": "abc"}, {"summary": "yes"}):
        with pytest.raises(InvalidInput):
            store.explain("x", **bad)


def test_recall_chat_text_says_when_nothing_is_stored(open_):
    store = open_("ada")
    assert store.recall("x").chat_text() == "Nothing is stored in this memory yet.\n"
    store.remember("alpha", type="fact")
    text = store.recall("x").chat_text()
    assert text.startswith(LEAD + "\n## facts\n- [") and "alpha" in text
