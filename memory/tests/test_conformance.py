"""What the store means: one suite, every test run on SQLite and on PostgreSQL.

Each bullet of the issue's "The store" section has its tests here, in its
order: namespaces, validated writes, forget, import/export, bad stored rows,
write limits, the values both backends accept and refuse, recall cost. The
process-level faults (two writers, SIGKILL, restarts) are in
test_store_faults.py.
"""

from __future__ import annotations

import io
import json
import math
import uuid
from datetime import datetime, timedelta, timezone

import poolsplit
import pytest
from conftest import execute_raw, plant, unstamped
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from poolsplit import Pool
from test_frame import LEAD, parse, reading

import poolsplit_memory
from poolsplit_memory import (
    DEFAULT_MAX_ENTRY_TOKENS,
    DEFAULT_POOLS,
    SPILL_OVER,
    InvalidInput,
    Recall,
    StoreUnavailable,
    check_entry,
    open_store,
)
from poolsplit_memory._ranking import Statistics, floored

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
PREFIX_PAIRS = [("ada", "ada/archive"), ("user:1", "user:10")]


def ranked(entries, pools, context, ranking="lexical"):
    """What a recall must return: retrieve_pools on the loadable entries with
    the ranking's scorer, each pool (these admit disjoint types) over its own
    entries: the lexical scorer over those entries' statistics, and the
    store's floor when the message matches one of them (test_ranking.py
    checks that scorer against the README's formula)."""
    if ranking == "core":
        return poolsplit.retrieve_pools(entries, pools, context, now=NOW)
    got = {}
    for pool in pools:
        own = [
            e
            for e in entries
            if pool.types is None or poolsplit.entry_type(e) in pool.types
        ]
        stats = Statistics(own)
        relevance = stats.relevance(context["message"], NOW)
        got[pool.name] = poolsplit.retrieve_pools(
            own,
            floored([pool], relevance),
            context,
            scorer=stats.scorer(context, relevance=relevance),
            now=NOW,
        )[pool.name]
    return got


def fresh() -> str:
    return f"ns-{uuid.uuid4().hex[:8]}"


def everything(store):
    """Every entry of the store's namespace, through list."""
    entries, cursor = [], None
    while True:
        page = store.list(limit=500, cursor=cursor)
        entries.extend(page.entries)
        if page.next_cursor is None:
            return entries
        cursor = page.next_cursor


# --- opening ---------------------------------------------------------------


def test_an_empty_url_is_invalid_input():
    for url in ("", "   "):
        with pytest.raises(InvalidInput) as info:
            open_store(url)
        assert info.value.field == "url"


def test_the_store_reports_its_namespace_url_and_pools(open_, store_url):
    pools = [Pool("all", 100, 3)]
    store = open_("ada", pools=pools)
    assert store.namespace == "ada"
    assert store.pools == tuple(pools)
    assert open_("x").pools is None
    assert store.url == store_url  # no password in the tests' urls


def test_opening_twice_on_an_existing_database_keeps_its_entries(open_):
    first = open_("ada").remember("kept", now=NOW)
    assert open_("ada").get(first.id)["content"] == "kept"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"namespace": ""}, "namespace"),
        ({"namespace": "a\x00b"}, "namespace"),
        ({"namespace": 5}, "namespace"),
        ({"pools": []}, "pools"),
        ({"pools": [Pool("a", 1, 1), Pool("a", 1, 1)]}, "pools"),
        ({"pools": ["not a pool"]}, "pools"),
        ({"max_entry_tokens": 0}, "max_entry_tokens"),
        ({"max_entry_tokens": True}, "max_entry_tokens"),
    ],
)
def test_bad_options_are_refused_naming_them(store_url, options, field):
    with pytest.raises(InvalidInput) as info:
        open_store(store_url, **options)
    assert info.value.field == field


# --- namespaces --------------------------------------------------------------


@pytest.mark.parametrize(("one", "other"), PREFIX_PAIRS)
def test_no_operation_crosses_namespaces_that_share_a_prefix(open_, one, other):
    a, b = open_(one), open_(other)
    kept = a.remember("alpha secret of a", type="fact", scope="always", now=NOW)
    mine = b.remember("beta note of b", type="fact", now=NOW)
    assert b.get(kept.id) is None
    assert [e["id"] for e in everything(b)] == [mine.id]
    assert b.recall("alpha secret", now=NOW).ids()["facts"] == [mine.id]
    assert "alpha" not in b.explain("alpha secret", now=NOW)
    with pytest.raises(InvalidInput) as info:
        b.update(kept.id, content="overwritten")
    assert info.value.field == "id"
    with pytest.raises(InvalidInput) as info:
        b.remember("replacing", supersedes=kept.id)
    assert info.value.field == "supersedes"
    assert b.forget(kept.id) is False
    out = io.StringIO()
    assert b.export_jsonl(out) == 1
    assert "alpha" not in out.getvalue()
    assert a.get(kept.id)["content"] == "alpha secret of a"
    assert [e["id"] for e in everything(a)] == [kept.id]


@pytest.mark.parametrize(("one", "other"), PREFIX_PAIRS)
def test_the_same_key_and_id_live_apart_in_two_namespaces(open_, one, other):
    a, b = open_(one), open_(other)
    first = a.remember("same words", key="k", now=NOW)
    second = b.remember("other words", key="k", now=NOW)
    assert first.id != second.id
    out = io.StringIO()
    a.export_jsonl(out)
    # same id, other namespace (a backup restored: its provenance kept)
    assert b.import_jsonl(io.StringIO(out.getvalue()), keep_provenance=True) == 1
    assert b.get(first.id) == a.get(first.id)
    assert a.forget(first.id) is True
    assert b.get(first.id) is not None


names = st.sampled_from(["ada", "ada/archive", "user:1", "user:10", "u", "U"])


@given(writes=st.lists(st.tuples(names, st.text(min_size=1, max_size=20)), max_size=12))
def test_property_each_namespace_sees_exactly_its_own_writes(open_, writes):
    try:
        run = uuid.uuid4().hex[:6]
        stores = {}
        expected: dict[str, set[str]] = {}
        for name, text in writes:
            if not text.strip() or "\x00" in text:
                continue
            namespace = f"{run}:{name}"
            store = stores.get(namespace) or open_(namespace)
            stores[namespace] = store
            expected.setdefault(namespace, set()).add(store.remember(text, now=NOW).id)
        for namespace, store in stores.items():
            assert {e["id"] for e in everything(store)} == expected[namespace]
            others = set().union(*(v for k, v in expected.items() if k != namespace))
            assert all(store.get(i) is None for i in others)
    finally:
        open_.close_all()


# --- writes are validated ----------------------------------------------------


def test_remember_assigns_id_and_created_and_returns_the_entry(open_):
    store = open_("ada")
    written = store.remember(
        "Ship it",
        type="task",
        tags=["release"],
        project="p",
        base_priority=7,
        now=NOW,
    )
    assert len(written.id) == 16
    int(written.id, 16)
    assert unstamped(written.entry) == {
        "id": written.id,
        "type": "task",
        "content": "Ship it",
        "created": NOW.isoformat(),
        "tags": ["release"],
        "project": "p",
        "base_priority": 7,
    }
    assert written.entry["written_by"] == store.writer.name
    assert store.get(written.id) == written.entry
    assert written.warnings == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 5}, "content"),
        ({"type": ""}, "type"),
        ({"scope": "alway"}, "scope"),
        ({"scope": "sometimes"}, "scope"),
        ({"scope": 1}, "scope"),
        ({"tags": "release"}, "tags"),
        ({"tags": ["ok", 3]}, "tags"),
        ({"project": ""}, "project"),
        ({"base_priority": "high"}, "base_priority"),
        ({"base_priority": True}, "base_priority"),
        ({"supersedes": ""}, "supersedes"),
        ({"key": ""}, "key"),
        ({"now": "yesterday"}, "now"),
    ],
)
def test_a_bad_argument_names_its_field_and_writes_nothing(open_, kwargs, field):
    store = open_("ada")
    args = {"content": "valid content", **kwargs}
    with pytest.raises(InvalidInput) as info:
        store.remember(args.pop("content"), **args)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert everything(store) == []


def test_a_type_only_the_spill_over_pool_admits_warns_with_the_closest_type(open_):
    written = open_("ada").remember("typo", type="corection", now=NOW)
    assert len(written.warnings) == 1
    assert "'correction'" in written.warnings[0]
    assert written.warnings[0].startswith("type: ")
    assert open_("ada").remember("plain", now=NOW).warnings == []  # "note"


def test_a_type_no_given_pool_admits_warns_that_it_never_loads(open_):
    store = open_("ada", pools=[Pool("tasks", 100, 2, ("task",))])
    written = store.remember("typo", type="tsk", now=NOW)
    assert any("never loads" in w and "'task'" in w for w in written.warnings)


# --- values that mislead a ranking (issue 51) ---------------------------------


def priority_warned(priority):
    """The oracle (README, "Values that mislead a ranking"): a write warns
    when base_priority is at or below 0 or above MAX_BASE_PRIORITY."""
    return not 0 < priority <= poolsplit_memory.MAX_BASE_PRIORITY


@given(
    priority=st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(min_value=-(2**80), max_value=2**80)
)
@example(priority=0)
@example(priority=-0.0)
@example(priority=5e-324)
@example(priority=1_000_000)
@example(priority=1_000_001)
@example(priority=1_000_000.0000001)
def test_store_check_entry_warns_on_a_priority_outside_the_documented_range(
    priority,
):
    warnings = check_entry({"id": "a", "content": "x", "base_priority": priority})
    ours = [w for w in warnings if w.startswith("base_priority: ")]
    assert len(ours) == priority_warned(priority)


@pytest.mark.parametrize(
    ("priority", "says"),
    [
        (-5, "at or below 0"),
        (0, "at or below 0"),
        (0.0, "at or below 0"),
        (1e-9, None),
        (5, None),
        (1_000_000, None),
        (1_000_000.5, "above 1,000,000"),
        (1e300, "above 1,000,000"),
        (2**70, "above 1,000,000"),
    ],
)
def test_store_remember_warns_on_a_misleading_priority_and_keeps_it(
    open_, priority, says
):
    store = open_("ada")
    written = store.remember("Release notes need a review", type="fact",
                             base_priority=priority, now=NOW)  # fmt: skip
    if says is None:
        assert written.warnings == []
    else:
        (warning,) = written.warnings
        assert warning.startswith("base_priority: ") and says in warning
    assert store.get(written.id)["base_priority"] == priority  # never refused


def test_store_update_warns_on_a_misleading_priority_while_it_lasts(open_):
    store = open_("ada")
    ident = store.remember("Deploys wait for CI", type="fact", now=NOW).id
    (warning,) = store.update(ident, base_priority=0).warnings
    assert "at or below 0" in warning
    assert store.get(ident)["base_priority"] == 0
    (warning,) = store.update(ident, content="Deploys wait for green CI").warnings
    assert "at or below 0" in warning  # the entry still holds it
    (warning,) = store.update(ident, base_priority=1e300).warnings
    assert "above 1,000,000" in warning
    assert store.update(ident, base_priority=9).warnings == []


def test_store_import_returns_each_lines_warnings(open_):
    store = open_("ada", pools=[Pool("facts", 400, 4, ("fact",))])
    lines = [
        {"id": "low", "type": "fact", "content": "a", "base_priority": -1},
        {"id": "fine", "type": "fact", "content": "b"},
        {"id": "high", "type": "fact", "content": "c", "base_priority": 1e300},
        {"id": "lost", "type": "fct", "content": "d"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    imported = store.import_jsonl(io.StringIO(text))
    assert imported == 4  # warned, all written
    assert [w.partition(": ")[0] for w in imported.warnings] == [
        "line 1",
        "line 3",
        "line 4",
    ]
    assert imported.warnings[0].startswith("line 1: base_priority: -1 is at or")
    assert imported.warnings[1].startswith("line 3: base_priority: 1e+300 is above")
    assert imported.warnings[2].startswith("line 4: type: no pool admits 'fct'")


def test_poolsplit_validate_warnings_come_back_from_check_entry():
    warnings = check_entry({"id": "a", "content": "x", "scop": "always"})
    assert any(w.startswith("scop: ") and "'scope'" in w for w in warnings)


def test_update_changes_only_the_given_fields_and_none_is_unchanged(open_):
    store = open_("ada")
    written = store.remember("v1", type="task", tags=["a"], project="p", now=NOW)
    updated = store.update(
        written.id, content="v2", type=None, tags=None, project=None, base_priority=3
    )
    expected = {**written.entry, "content": "v2", "base_priority": 3}
    assert unstamped(updated.entry) == unstamped(expected)
    assert updated.entry["written_at"] == written.entry["written_at"]
    assert updated.entry["updated_by"] == store.writer.name
    assert store.get(written.id) == updated.entry
    with pytest.raises(InvalidInput, match="^nothing to update"):
        store.update(written.id, scope=None, tags=None, project=None)


def test_update_clears_with_context_an_empty_list_and_an_empty_project(open_):
    store = open_("ada")
    written = store.remember(
        "v1", type="correction", scope="always", tags=["a"], project="p", now=NOW
    )
    cleared = store.update(written.id, tags=[], project="")
    assert {"tags", "project"}.isdisjoint(cleared.entry)
    assert cleared.warnings == []
    demoted = store.update(written.id, scope="Context")
    assert "scope" not in demoted.entry
    (warning,) = demoted.warnings
    assert warning.startswith(f"scope: entry {written.id!r} was always-scope")
    assert store.update(written.id, scope=" ALWAYS ").entry["scope"] == "always"
    assert store.remember("r", scope="Always").entry["scope"] == "always"
    assert "scope" not in store.remember("s", scope="context").entry
    with pytest.raises(InvalidInput, match="^scope: must be 'always' or 'context'"):
        store.update(written.id, scope="sometimes")
    with pytest.raises(InvalidInput, match="^project: must not be empty"):
        store.update(written.id, project="  ")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": None}, None),  # None: unchanged, so nothing to update
        ({"type": None}, None),
        ({"scope": "ALWAY"}, "scope"),
        ({"project": "  "}, "project"),
        ({"tags": "x"}, "tags"),
        ({"base_priority": math.nan}, "base_priority"),
        ({}, None),
    ],
)
def test_a_bad_update_names_its_field_and_changes_nothing(open_, kwargs, field):
    store = open_("ada")
    written = store.remember("v1", now=NOW)
    with pytest.raises(InvalidInput) as info:
        store.update(written.id, **kwargs)
    assert info.value.field == field
    assert store.get(written.id) == written.entry


def test_update_of_an_unknown_id_is_invalid_input(open_):
    with pytest.raises(InvalidInput) as info:
        open_("ada").update("nope", content="x")
    assert info.value.field == "id"


def test_supersedes_retires_the_old_entry_in_the_same_write(open_):
    store = open_("ada")
    old = store.remember("Deploys go out on Friday", type="fact", now=NOW)
    new = store.remember(
        "Deploys go out on Monday", type="fact", supersedes=old.id, now=NOW
    )
    assert store.get(old.id)["superseded_by"] == new.id
    assert store.recall("deploys", now=NOW).ids()["facts"] == [new.id]
    with pytest.raises(InvalidInput) as info:  # no longer active
        store.remember("Tuesday", type="fact", supersedes=old.id, now=NOW)
    assert info.value.field == "supersedes"
    assert len(everything(store)) == 2  # the refused write wrote nothing


def test_a_refused_supersedes_writes_neither_entry(open_):
    store = open_("ada")
    with pytest.raises(InvalidInput) as info:
        store.remember("new", supersedes="missing", now=NOW)
    assert info.value.field == "supersedes"
    assert everything(store) == []


def test_a_retried_remember_with_the_same_key_writes_once(open_):
    store = open_("ada")
    first = store.remember("only once", type="task", key="call-1", now=NOW)
    again = store.remember(
        "only once", type="task", key="call-1", now=NOW + timedelta(1)
    )
    assert again.id == first.id
    assert again.entry == first.entry
    assert len(everything(store)) == 1
    with pytest.raises(InvalidInput) as info:
        store.remember("other words", type="task", key="call-1", now=NOW)
    assert info.value.field == "key"
    assert len(everything(store)) == 1


def test_a_key_is_free_again_after_its_entry_is_forgotten(open_):
    store = open_("ada")
    first = store.remember("x", key="k", now=NOW)
    assert store.forget(first.id)
    assert store.remember("y", key="k", now=NOW).id != first.id


# --- forget deletes ------------------------------------------------------------


def test_forget_answers_true_once_then_false(open_):
    store = open_("ada")
    written = store.remember("to forget", now=NOW)
    assert store.forget(written.id) is True
    assert store.forget(written.id) is False
    assert store.get(written.id) is None
    assert store.forget("never-existed") is False


def test_forget_deletes_the_entries_retired_in_its_favour(open_):
    store = open_("ada")
    first = store.remember("v1", type="fact", now=NOW)
    second = store.remember("v2", type="fact", supersedes=first.id, now=NOW)
    third = store.remember("v3", type="fact", supersedes=second.id, now=NOW)
    other = store.remember("unrelated", type="fact", now=NOW)
    assert store.forget(third.id) is True
    assert [e["id"] for e in everything(store)] == [other.id]


def test_forgetting_a_retired_entry_keeps_its_successor(open_):
    store = open_("ada")
    first = store.remember("v1", type="fact", now=NOW)
    second = store.remember("v2", type="fact", supersedes=first.id, now=NOW)
    assert store.forget(first.id) is True
    assert [e["id"] for e in everything(store)] == [second.id]


def raw_bodies(url: str) -> bytes:
    """The database's bytes (SQLite: the file and its WAL) or, on
    PostgreSQL, every stored body as the server returns it (the entries'
    and their history's)."""
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT body, client_key FROM poolsplit_entries"
            ).fetchall()
            rows += conn.execute("SELECT body, id FROM poolsplit_history").fetchall()
        return json.dumps(rows).encode()
    data = b""
    for suffix in ("", "-wal", "-journal"):
        try:
            with open(url + suffix, "rb") as file:
                data += file.read()
        except FileNotFoundError:
            pass
    return data


def test_forgotten_content_is_gone_from_the_database(open_, store_url):
    store = open_("ada")
    secret = f"SECRET-{uuid.uuid4().hex}"
    kept = store.remember("kept " * 50, now=NOW)
    written = store.remember(f"the token is {secret} " * 5, scope="always", now=NOW)
    store.recall("token", now=NOW)
    assert secret.encode() in raw_bodies(store_url)  # the check can fail
    assert store.forget(written.id)
    assert secret.encode() not in raw_bodies(store_url)
    assert store.get(kept.id) is not None


def test_updated_away_content_is_gone_from_the_database_once_forgotten(
    open_, store_url
):
    """An update keeps what it replaced in the entry's history (issue 49:
    every write appends a version); forgetting the entry removes it."""
    store = open_("ada")
    secret = f"SECRET-{uuid.uuid4().hex}"
    written = store.remember(f"password {secret}", now=NOW)
    assert secret.encode() in raw_bodies(store_url)
    store.update(written.id, content="password removed")
    assert secret in store.history(written.id)[0]["entry"]["content"]
    assert store.forget(written.id)
    assert secret.encode() not in raw_bodies(store_url)


# --- import / export -----------------------------------------------------------


def jsonl(*entries) -> io.StringIO:
    return io.StringIO("".join(json.dumps(e) + "\n" for e in entries))


def test_export_then_import_round_trips_every_entry(open_):
    source = open_("ada")
    old = source.remember("v1", type="fact", now=NOW)
    source.remember("v2", type="fact", supersedes=old.id, now=NOW)
    source.remember("always", type="correction", scope="always", tags=["a"], now=NOW)
    out = io.StringIO()
    assert source.export_jsonl(out) == 3
    target = open_("copy")
    assert target.import_jsonl(io.StringIO(out.getvalue()), keep_provenance=True) == 3
    assert everything(target) == everything(source)
    # without keep_provenance: the same entries, stamped as the importer's
    again = open_("again", writer="importer")
    assert again.import_jsonl(io.StringIO(out.getvalue())) == 3
    assert unstamped(everything(again)) == unstamped(everything(source))
    assert {e["written_by"] for e in everything(again)} == {"importer"}


def test_import_and_export_take_paths(open_, tmp_path):
    source = open_("ada")
    source.remember("by path", now=NOW)
    path = tmp_path / "out.jsonl"
    assert source.export_jsonl(path) == 1
    assert open_("copy").import_jsonl(str(path)) == 1


def test_import_is_all_or_nothing(open_):
    store = open_("ada")
    source = jsonl(
        {"id": "a", "content": "fine"},
        {"id": "b", "content": "fine too"},
        {"id": "c", "content": "bad", "base_priority": "high"},
    )
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(source)
    assert info.value.line == 3
    assert info.value.field == "base_priority"
    assert info.value.id == "c"
    assert str(info.value).startswith("line 3: base_priority: ")
    assert everything(store) == []


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"id": "a", "content": "x"}\nnot json\n', 2),
        ('{"id": "a", "content": "x"}\n[1, 2]\n', 2),
        ('\n\n{"id": "a", "content": "x\\u0000"}\n', 3),
        ('{"id": "a", "content": "x", "base_priority": Infinity}\n', 1),
        ('{"id": "a", "content": "x", "superseded_by": "nowhere"}\n', 1),
        ('{"id": 5, "content": "x"}\n', 1),
    ],
)
def test_a_bad_line_is_named_and_nothing_is_imported(open_, text, line):
    store = open_("ada")
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(io.StringIO(text))
    assert info.value.line == line
    assert everything(store) == []


def test_a_duplicate_id_in_the_file_names_both_lines(open_):
    store = open_("ada")
    source = jsonl(
        {"id": "a", "content": "1"},
        {"id": "b", "content": "2"},
        {"id": "a", "content": "3"},
    )
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(source)
    assert "lines 1 and 3" in str(info.value)
    assert info.value.field == "id"
    assert everything(store) == []


def test_an_id_already_stored_is_refused_unless_replace(open_):
    store = open_("ada")
    store.import_jsonl(jsonl({"id": "a", "content": "first"}))
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(
            jsonl({"id": "new", "content": "x"}, {"id": "a", "content": "second"})
        )
    assert info.value.line == 2
    assert "replace=True" in str(info.value)
    assert [e["content"] for e in everything(store)] == ["first"]
    assert (
        store.import_jsonl(jsonl({"id": "a", "content": "second"}), replace=True) == 1
    )
    assert [e["content"] for e in everything(store)] == ["second"]


def test_replace_lets_the_later_line_win(open_):
    store = open_("ada")
    source = jsonl({"id": "a", "content": "1"}, {"id": "a", "content": "2"})
    assert store.import_jsonl(source, replace=True) == 1
    assert store.get("a")["content"] == "2"


def test_import_assigns_an_id_to_an_entry_without_one(open_):
    store = open_("ada")
    assert store.import_jsonl(jsonl({"content": "no id"})) == 1
    (entry,) = everything(store)
    assert len(entry["id"]) == 16


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
)
entries_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.text(
                st.characters(
                    blacklist_categories=("Cs",), blacklist_characters="\x00"
                ),
                min_size=1,
                max_size=40,
            ).filter(str.strip),
            "type": st.sampled_from(["note", "fact", "task", "correction", "mine"]),
        },
        optional={
            "scope": st.just("always"),
            "tags": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
            "base_priority": st.one_of(
                st.integers(-100, 100), st.floats(-100, 100, allow_nan=False)
            ),
            "project": st.sampled_from(["p", "q"]),
            "created": st.sampled_from(["2026-01-01T00:00:00+00:00", "2025-05-05"]),
            "source": json_leaf,
            "extra": st.dictionaries(
                st.sampled_from(["x", "y"]), json_leaf, max_size=2
            ),
        },
    ),
    max_size=8,
)


@given(entries=entries_strategy)
def test_property_export_import_round_trips_equal(open_, entries):
    try:
        source, target = open_(fresh()), open_(fresh())
        for number, entry in enumerate(entries):
            entry["id"] = f"e{number}"
        assert source.import_jsonl(jsonl(*entries)) == len(entries)
        out = io.StringIO()
        assert source.export_jsonl(out) == len(entries)
        restored = target.import_jsonl(
            io.StringIO(out.getvalue()), keep_provenance=True
        )
        assert restored == len(entries)
        assert everything(target) == everything(source)
        assert unstamped(everything(source)) == entries
    finally:
        open_.close_all()


# --- list ------------------------------------------------------------------------


def test_list_pages_in_insertion_order_and_filters_by_type(open_):
    store = open_("ada")
    ids = [
        store.remember(f"n{i}", type="task" if i % 2 else "fact", now=NOW).id
        for i in range(7)
    ]
    page = store.list(limit=3)
    assert [e["id"] for e in page.entries] == ids[:3]
    assert page.next_cursor is not None
    assert [
        e["id"] for e in store.list(limit=3, cursor=page.next_cursor).entries
    ] == ids[3:6]
    assert [e["id"] for e in store.list(type="task").entries] == ids[1::2]
    assert store.list(limit=7).next_cursor is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": True}, "limit"),
        ({"cursor": "abc"}, "cursor"),
        ({"cursor": "-1"}, "cursor"),
        ({"cursor": "9" * 19}, "cursor"),  # past a 64-bit seq
        ({"cursor": "9" * 400}, "cursor"),
        ({"cursor": str(2**63)}, "cursor"),
        ({"cursor": "0"}, "cursor"),
        ({"cursor": "007"}, "cursor"),
        ({"cursor": "\u0663"}, "cursor"),  # a digit, not an ASCII one
        ({"cursor": 5}, "cursor"),
        ({"type": ""}, "type"),
    ],
)
def test_bad_list_arguments_are_refused(open_, kwargs, field):
    store = open_("ada")
    store.remember("one", now=NOW)
    with pytest.raises(InvalidInput) as info:
        store.list(**kwargs)
    assert info.value.field == field


def test_a_cursor_belongs_to_its_namespace_and_reveals_no_position(open_):
    """A cursor of one namespace is refused in another: it is not a position
    in the file (which would count every namespace's rows)."""
    ada, bob = open_("ada"), open_("bob")
    for number in range(3):
        bob.remember(f"bob {number}", now=NOW)
    for number in range(3):
        ada.remember(f"ada {number}", now=NOW)
    cursor = ada.list(limit=1).next_cursor
    assert cursor is not None and not cursor.isdigit()
    with pytest.raises(InvalidInput) as info:
        bob.list(limit=1, cursor=cursor)
    assert info.value.field == "cursor"
    again = ada.list(limit=1).next_cursor
    assert again != cursor  # no counter: two cursors of one position differ
    rest = ada.list(limit=5, cursor=again).entries
    assert [e["content"] for e in rest] == ["ada 1", "ada 2"]


@given(
    count=st.integers(0, 30),
    limit=st.integers(1, 8),
    forget=st.sets(st.integers(0, 29), max_size=10),
)
def test_property_pages_cover_every_entry_exactly_once(open_, count, limit, forget):
    try:
        store = open_(fresh())
        ids = [store.remember(f"entry {i}", now=NOW).id for i in range(count)]
        seen, cursor, pages = [], None, 0
        while True:
            page = store.list(limit=limit, cursor=cursor)
            assert len(page.entries) <= limit
            seen.extend(e["id"] for e in page.entries)
            pages += 1
            # forgetting entries between pages never repeats or skips a survivor
            for index in list(forget):
                if index < len(ids):
                    store.forget(ids[index])
            forget = set()
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
            assert pages <= count + 1
        assert len(seen) == len(set(seen))
        assert set(seen) <= set(ids)
        assert set(ids) - set(seen) <= {i for i in ids if store.get(i) is None}
    finally:
        open_.close_all()


# --- recall ----------------------------------------------------------------------


def test_recall_renders_the_pools_and_reports_ids(open_):
    store = open_("ada")
    rule = store.remember(
        "Never force-push to main", type="correction", scope="always", now=NOW
    )
    task = store.remember("Ship the billing fix", type="task", now=NOW)
    note = store.remember("The office plant needs water", now=NOW)
    recall = store.recall("billing fix", now=NOW)
    assert isinstance(recall, Recall)
    ids = recall.ids()
    assert list(ids) == [p.name for p in DEFAULT_POOLS] + [SPILL_OVER[0]]
    assert ids["corrections"] == [rule.id]
    assert ids["tasks"] == [task.id]
    # every pool its own floor: the message matches nothing in "other", so
    # that pool loads as for a vague message (its freshest)
    assert ids["other"] == [note.id]
    # the frame: every pool's entries, dated, their contents as stored
    assert parse(recall.text, False) == (
        reading(recall.pools, store.writer.name, False),
        {},
    )
    assert recall.text.startswith(
        f"{LEAD}\n## corrections\n- 2026-06-01: Never force-push to main\n\n"
        "## tasks\n- 2026-06-01: Ship the billing fix\n"
    )
    assert recall.to_dict() == {"pools": ids, "skipped": [], "warnings": []}
    assert store.recall("anything new?", now=NOW).ids()["other"] == [note.id]


def test_recall_with_given_pools_uses_them_as_they_are(open_):
    store = open_("ada", pools=[Pool("work", 50, 1, ("task",))])
    store.remember("a note", now=NOW)
    task = store.remember("a task", type="task", now=NOW)
    assert store.recall("task", now=NOW).ids() == {"work": [task.id]}


def test_an_always_entry_no_given_pool_admits_is_a_recall_warning(open_):
    store = open_("ada", pools=[Pool("work", 50, 1, ("task",))])
    lost = store.remember("an always note", scope="always", now=NOW)
    recall = store.recall("x", now=NOW)
    assert any(lost.id in w and "no pool admits" in w for w in recall.warnings)


def test_recall_returns_copies_the_caller_may_change(open_):
    store = open_("ada")
    store.remember("stable", type="fact", tags=["a"], now=NOW)
    first = store.recall("stable", now=NOW)
    first.pools["facts"][0]["content"] = "changed"
    first.pools["facts"][0]["tags"].append("b")
    again = store.recall("stable", now=NOW).pools["facts"][0]
    assert again["content"] == "stable"
    assert again["tags"] == ["a"]


def _read(recall):
    return (
        recall.text,
        recall.pools,
        recall.ids(),
        recall.chat_text(),
        recall.to_dict(),
        recall.skipped,
        recall.warnings,
        recall.always_skipped,
        recall.loaded,
    )


def test_a_recall_read_after_later_writes_is_the_recall_of_its_moment(open_):
    """A recall's text and pools are made when first read; reading them
    after the store changed the chosen entries gives what reading at once
    gave (and a caller's edit of pools reaches neither the store nor the
    recall's ids and chat text)."""
    store = open_("ada")
    rule = store.remember("Never deploy on Fridays", type="correction", scope="always")
    fact = store.remember("billing runs nightly", type="fact", tags=["billing"])
    store.remember("billing owner is Sam", type="fact", project="pay")
    late = store.recall("billing", now=NOW)
    at_once = _read(store.recall("billing", now=NOW))
    assert fact.id in at_once[2]["facts"] and rule.id in at_once[2]["corrections"]
    store.update(fact.id, content="billing runs hourly", tags=["changed"])
    store.update(rule.id, content="Deploy any day")
    store.remember("billing is late again", type="fact")
    store.forget(at_once[2]["facts"][-1])
    assert _read(late) == at_once
    late.pools["facts"][0]["content"] = "edited by the caller"
    assert late.chat_text() == at_once[3]
    assert store.recall("billing", now=NOW).pools["facts"][0]["content"] != (
        "edited by the caller"
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"message": 5}, "message"), ({"tags": "x"}, "tags"), ({"project": 3}, "project")],
)
def test_bad_recall_arguments_are_refused(open_, kwargs, field):
    args = {"message": "hi", **kwargs}
    with pytest.raises(InvalidInput) as info:
        open_("ada").recall(args.pop("message"), **args)
    assert info.value.field == field


def test_explain_shows_the_table_for_the_same_candidates(open_):
    store = open_("ada")
    written = store.remember("Ship the billing fix", type="task", now=NOW)
    text = store.explain("billing", now=NOW)
    assert written.id in text
    assert "selected" in text


recall_entries = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.text("abcdefg hijk", min_size=1, max_size=60).filter(
                str.strip
            ),
            "type": st.sampled_from(
                ["note", "fact", "task", "correction", "skill", "other1"]
            ),
        },
        optional={
            "scope": st.just("always"),
            "tags": st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2),
            "base_priority": st.integers(0, 10),
            "project": st.sampled_from(["p", "q"]),
        },
    ),
    max_size=15,
)


@given(entries=recall_entries, message=st.text("abcdefg hijk", max_size=20))
def test_property_recall_equals_retrieve_pools_on_the_active_entries(
    open_, entries, message
):
    try:
        store = open_(fresh())
        for entry in entries:
            store.remember(entry.pop("content"), now=NOW, **entry)
        stored = everything(store)
        active = [e for e in stored if poolsplit.default_is_active(e)]
        named = {t for p in DEFAULT_POOLS for t in p.types or ()}
        other = Pool(
            *SPILL_OVER, types=tuple(sorted({e["type"] for e in active} - named))
        )
        context = {"message": message, "tags": ["a"], "project": "p"}
        expected = ranked(active, [*DEFAULT_POOLS, other], context)
        for _ in range(2):  # a new snapshot, then a cached one
            recall = store.recall(message, tags=["a"], project="p", now=NOW)
            assert recall.pools == expected
            assert parse(recall.text, False) == (
                reading(expected, store.writer.name, False),
                {},
            )
    finally:
        open_.close_all()


# --- a bad stored row never disables recall ---------------------------------------


BAD_ROWS = [
    (
        "prio",
        {"id": "prio", "type": "fact", "content": "x", "base_priority": "high"},
        "fact",
        None,
        "base_priority: ",
    ),
    ("json", '{"id": "json", "content": ', "fact", None, "invalid JSON: "),
    (
        "array",
        '["not", "an", "object"]',
        "fact",
        None,
        "must be a JSON object, got array",
    ),
    (
        "tags",
        {"id": "tags", "type": "fact", "content": "x", "tags": 5},
        "fact",
        None,
        "tags: ",
    ),
]


def test_bad_rows_are_skipped_and_named_while_the_rest_loads(open_, store_url):
    store = open_("ada")
    good = store.remember("Ship the billing fix", type="fact", now=NOW)
    store.recall("billing", now=NOW)  # warm the cache: a planted row must still show
    for ident, body, kind, scope, _ in BAD_ROWS:
        plant(store_url, "ada", ident, body, type=kind, scope=scope)
    recall = store.recall("billing", now=NOW)
    assert recall.ids()["facts"] == [good.id]
    reasons = {s.id: s.reason for s in recall.skipped}
    assert set(reasons) == {row[0] for row in BAD_ROWS}
    for ident, _, _, _, reason in BAD_ROWS:
        assert reasons[ident].startswith(reason), reasons[ident]
    assert "Not loaded" not in recall.text  # none of them is always-scope
    assert {s["id"] for s in recall.to_dict()["skipped"]} == set(reasons)
    assert store.get("json") == {"id": "json", "unreadable": reasons["json"]}
    assert store.get("prio")["base_priority"] == "high"
    assert ident in store.explain("billing", now=NOW)


def test_a_bad_always_row_is_named_in_the_text_itself(open_, store_url):
    store = open_("ada")
    rule = store.remember(
        "Never force-push", type="correction", scope="always", now=NOW
    )
    body = {
        "id": "bad",
        "type": "correction",
        "scope": "always",
        "content": "Always sign commits",
        "base_priority": "high",
    }
    plant(store_url, "ada", "bad", body, type="correction", scope="always")
    plant(store_url, "ada", "broken", "{oops", type="correction", scope="always")
    recall = store.recall("commit", now=NOW)
    assert recall.ids()["corrections"] == [rule.id]
    assert f"{LEAD}\n## corrections\n- 2026-06-01: Never force-push\n" in recall.text
    assert "## Not loaded" in recall.text
    assert "'bad' could not be loaded (base_priority: " in recall.text
    assert "'broken' could not be loaded (invalid JSON" in recall.text
    assert {s.id for s in recall.skipped} == {"bad", "broken"}


def test_a_bad_row_can_be_fixed_by_update_or_forgotten(open_, store_url):
    store = open_("ada")
    plant(
        store_url,
        "ada",
        "prio",
        {"id": "prio", "type": "fact", "content": "x", "base_priority": "high"},
        type="fact",
    )
    plant(store_url, "ada", "json", "{", type="fact")
    fixed = store.update("prio", base_priority=5).entry
    assert unstamped(fixed) == {
        "id": "prio",
        "type": "fact",
        "content": "x",
        "base_priority": 5,
    }
    assert "written_by" not in fixed  # a row another tool wrote: never invented
    assert fixed["updated_by"] == store.writer.name
    with pytest.raises(InvalidInput) as info:
        store.update("json", content="y")
    assert info.value.field == "id"
    with pytest.raises(StoreUnavailable) as failed:
        store.export_jsonl(io.StringIO())
    assert "'json'" in str(failed.value)
    assert store.forget("json") is True
    recall = store.recall("x", now=NOW)
    assert recall.skipped == []
    assert recall.ids()["facts"] == ["prio"]


# --- write limits ------------------------------------------------------------------


def test_an_entry_over_the_default_cap_is_refused(open_):
    store = open_("ada")
    too_big = "word " * (DEFAULT_MAX_ENTRY_TOKENS * 4 // 5 + 1)  # 4 chars a token
    assert poolsplit.default_token_counter(too_big) > DEFAULT_MAX_ENTRY_TOKENS
    with pytest.raises(InvalidInput) as info:
        store.remember(too_big, type="correction", scope="always", now=NOW)
    assert info.value.field == "content"
    assert "max_entry_tokens" in str(info.value)
    assert everything(store) == []
    at_cap = "x" * (DEFAULT_MAX_ENTRY_TOKENS * 4)
    assert store.remember(at_cap, now=NOW).id


def test_the_cap_and_the_counter_are_options(open_):
    store = open_(
        "ada", max_entry_tokens=3, token_counter=lambda text: len(text.split())
    )
    assert store.remember("one two three", now=NOW).id
    with pytest.raises(InvalidInput):
        store.remember("one two three four", now=NOW)
    written = store.remember("a b c", now=NOW)
    with pytest.raises(InvalidInput):
        store.update(written.id, content="a b c d")
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(jsonl({"content": "1 2 3 4"}))
    assert info.value.line == 1


def test_a_token_count_below_the_counted_content_is_refused(open_):
    """The review's bypass: ten always-scope corrections of 1,500 words each,
    imported with token_count 1, passed every cap and the always total."""
    store = open_("ada")
    words = " ".join(["word"] * 1500)
    lines = [
        {"content": words, "type": "correction", "scope": "always", "token_count": 1}
        for _ in range(10)
    ]
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(jsonl(*lines))
    assert info.value.field == "token_count"
    assert info.value.line == 1
    assert "got 1" in str(info.value)
    assert store.list().entries == []
    counted = poolsplit.default_token_counter(words)
    exact = [{**line, "token_count": counted} for line in lines[:3]]
    assert store.import_jsonl(jsonl(*exact)) == 3  # an honest count is kept
    assert any("4000" in w for w in store.recall("x", now=NOW).warnings)


def test_a_token_count_is_held_to_the_per_entry_limit_and_dropped_by_new_content(
    open_,
):
    store = open_(
        "ada", max_entry_tokens=3, token_counter=lambda text: len(text.split())
    )
    with pytest.raises(InvalidInput) as info:
        store.import_jsonl(jsonl({"content": "a b", "token_count": 4}))
    assert info.value.field == "token_count"
    assert store.import_jsonl(jsonl({"id": "k", "content": "a", "token_count": 3}))
    updated = store.update("k", content="a b")  # the old count is stale: dropped
    assert "token_count" not in updated.entry
    assert "token_count" not in store.get("k")
    with pytest.raises(InvalidInput) as info:
        store.update("k", content="a b c d")
    assert info.value.field == "content"


def test_an_always_write_never_fails_on_a_read_after_its_commit(open_, monkeypatch):
    store = open_("ada")
    store.remember("x" * 7200, type="correction", scope="always", now=NOW)
    store.remember("y" * 7200, type="correction", scope="always", now=NOW)
    old = store.remember("old", type="correction", now=NOW)
    store.recall("old", now=NOW)  # a snapshot for the writes to bring forward

    def down(*args, **kwargs):
        raise StoreUnavailable("database unreachable", store.url)

    # every read after a commit (signal_at: the write's own, to bring the
    # recall's snapshot forward)
    for name in ("read", "version", "since", "signal_at"):
        monkeypatch.setattr(store._backend, name, down)
    third = store.remember("z" * 7200, type="correction", scope="always", now=NOW)
    assert any("4000" in w for w in third.warnings)  # read inside the write
    updated = store.update(old.id, scope="always")
    assert any("4000" in w for w in updated.warnings)
    monkeypatch.undo()
    assert store.get(third.id) is not None
    assert store.get(old.id)["scope"] == "always"


def test_always_entries_past_4000_tokens_warn_on_the_write_and_every_recall(open_):
    store = open_("ada")
    # 1800 tokens each, three memories (the same one twice would be written once)
    first = store.remember("x" * 7200, type="correction", scope="always", now=NOW)
    second = store.remember("y" * 7200, type="correction", scope="always", now=NOW)
    assert not any("4000" in w for w in first.warnings + second.warnings)
    third = store.remember("z" * 7200, type="correction", scope="always", now=NOW)
    assert any("4000" in w for w in third.warnings)
    for _ in range(2):
        assert any("4000" in w for w in store.recall("x", now=NOW).warnings)
    assert store.remember("small note", now=NOW).warnings == []


# --- both backends accept and refuse the same values --------------------------------


REFUSED = [
    ({"content": "a\x00b"}, "content"),
    ({"content": "lone \ud800 surrogate"}, "content"),
    ({"tags": ["a\x00"]}, "tags"),
    ({"project": "p\x00"}, "project"),
    ({"type": "t\x00"}, "type"),
    ({"base_priority": math.nan}, "base_priority"),
    ({"base_priority": math.inf}, "base_priority"),
    ({"base_priority": -math.inf}, "base_priority"),
    ({"base_priority": 1e309}, "base_priority"),
    ({"base_priority": 10**400}, "base_priority"),
    ({"key": "k\x00"}, "key"),
]


@pytest.mark.parametrize(("kwargs", "field"), REFUSED)
def test_both_backends_refuse_the_same_values(open_, kwargs, field):
    store = open_("ada")
    args = {"content": "valid", **kwargs}
    with pytest.raises(InvalidInput) as info:
        store.remember(args.pop("content"), now=NOW, **args)
    assert info.value.field == field
    assert everything(store) == []


ACCEPTED = [
    {"content": "émoji 🎉 and ünïcode"},
    {"content": "multi\nline\ttext"},
    {"base_priority": 1e308},
    {"base_priority": -0.0},
    {"base_priority": 10**18},
    {"tags": ["x" * 200, "ü"]},
    {"content": "'; DROP TABLE poolsplit_entries; --"},
]


@pytest.mark.parametrize("kwargs", ACCEPTED)
def test_both_backends_store_the_same_values_exactly(open_, kwargs):
    store = open_("ada")
    args = {"content": "valid", **kwargs}
    written = store.remember(args.pop("content"), now=NOW, **args)
    assert store.get(written.id) == written.entry
    stored = store.get(written.id)
    assert json.dumps(stored) == json.dumps(written.entry)


def test_an_imported_infinity_is_refused_like_a_remembered_one(open_):
    store = open_("ada")
    for text in (
        '{"content": "x", "base_priority": 1e309}',
        '{"content": "x", "other": NaN}',
    ):
        with pytest.raises(InvalidInput):
            store.import_jsonl(io.StringIO(text))
    assert everything(store) == []


# --- recall cost --------------------------------------------------------------------


def test_a_warm_recall_reads_no_entry_rows(open_):
    store = open_("ada")
    for number in range(20):
        store.remember(f"entry {number}", type="fact", now=NOW)
    store.recall("entry", now=NOW)
    before = store._backend.rows_read
    for _ in range(3):
        store.recall("entry 5", now=NOW)
        store.explain("entry", now=NOW)
    assert store._backend.rows_read == before
    store.remember("one more", type="fact", now=NOW)
    store.recall("entry", now=NOW)
    assert store._backend.rows_read == before + 1  # the row written, no other


def test_a_write_to_another_namespace_reads_no_entry_row(open_):
    """Issue 26: on SQLite a write to another namespace of the file made the
    next recall re-read the whole namespace."""
    store, other = open_("ada"), open_("bob")
    for number in range(20):
        store.remember(f"entry {number}", type="fact", now=NOW)
    store.recall("entry", now=NOW)
    before = store._backend.rows_read
    other.remember("elsewhere", type="fact", now=NOW)
    assert [e["content"] for e in store.recall("entry 5", now=NOW).pools["facts"]]
    assert store._backend.rows_read == before


def test_a_write_by_another_store_is_seen_by_the_next_recall(open_):
    reader, writer = open_("ada"), open_("ada")
    reader.recall("x", now=NOW)
    written = writer.remember("from the other store", type="fact", now=NOW)
    assert reader.recall("other store", now=NOW).ids()["facts"] == [written.id]
    writer.forget(written.id)
    assert reader.recall("other store", now=NOW).ids()["facts"] == []


def test_a_hand_edit_is_seen_by_the_next_recall_of_a_running_store(open_, store_url):
    store = open_("ada")
    written = store.remember("original words", type="fact", now=NOW)
    assert (
        store.recall("words", now=NOW).pools["facts"][0]["content"] == "original words"
    )
    edited = json.dumps({**written.entry, "content": "edited words"})
    execute_raw(
        store_url,
        "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
        (edited, "ada", written.id),
    )
    assert store.recall("words", now=NOW).pools["facts"][0]["content"] == "edited words"
    execute_raw(
        store_url,
        "DELETE FROM poolsplit_entries WHERE namespace = ? AND id = ?",
        ("ada", written.id),
    )
    assert store.recall("words", now=NOW).ids()["facts"] == []


def test_emptying_the_table_by_hand_is_seen_by_every_running_store(open_, store_url):
    ada, bob = open_("ada"), open_("bob")
    ada.remember("ada's words", type="fact", now=NOW)
    bob.remember("bob's words", type="fact", now=NOW)
    assert ada.recall("words", now=NOW).ids()["facts"]
    assert bob.recall("words", now=NOW).ids()["facts"]
    emptying = (  # SQLite has no TRUNCATE; DELETE without WHERE is its form
        "TRUNCATE poolsplit_entries"
        if store_url.startswith("postgres")
        else "DELETE FROM poolsplit_entries"
    )
    execute_raw(store_url, emptying)
    assert ada.recall("words", now=NOW).ids()["facts"] == []
    assert bob.recall("words", now=NOW).ids()["facts"] == []


def test_a_write_to_another_namespace_is_not_seen(open_):
    a, b = open_("ada"), open_("bob")
    b.remember("bob's", type="fact", now=NOW)
    assert a.recall("bob", now=NOW).ids()["facts"] == []


# --- closing --------------------------------------------------------------------------


def test_a_closed_store_is_unavailable(open_):
    store = open_("ada")
    written = store.remember("x", now=NOW)
    with store:
        pass
    with pytest.raises(StoreUnavailable) as info:
        store.get(written.id)
    assert str(info.value).startswith("store is closed")
    store.close()  # twice is fine


def test_the_package_exports_the_design_names():
    names = {
        "open_store",
        "Store",
        "Written",
        "Recall",
        "Skipped",
        "Page",
        "Updated",
        "StoreError",
        "InvalidInput",
        "StoreUnavailable",
        "DEFAULT_POOLS",
        "DEFAULT_MAX_ENTRY_TOKENS",
        "build_entry",
        "check_entry",
    }
    assert names <= set(poolsplit_memory.__all__)
    assert issubclass(InvalidInput, ValueError)


# --- the indexed candidate query is a speed-up, not a rule -----------------------


def mixed_history(count):
    """Live entries of the pools' types, always-scope rows of a type no pool
    names, other types, archived and superseded rows."""
    kinds = ["correction", "task", "fact", "transcript", "note"]
    lines = []
    for number in range(count):
        entry = {
            "id": f"e{number}",
            "type": kinds[number % len(kinds)],
            "content": f"entry {number} about billing"
            if number % 3
            else f"entry {number}",
            "created": f"2026-05-{1 + number % 28:02d}",
        }
        if number % 7 == 0:
            entry["scope"] = "always"
        if number % 11 == 0:
            entry["status"] = "archived"
        if number % 13 == 0 and number:
            entry["superseded_by"] = "e1"
        lines.append(entry)
    return lines


@pytest.mark.parametrize(
    "pools",
    [
        [Pool("core", 0, 0, ("correction",)), Pool("work", 60, 3, ("task", "fact"))],
        [Pool("all", 100, 5)],
        [Pool("none", 100, 5, ())],
    ],
    ids=["typed", "untyped", "empty"],
)
@pytest.mark.parametrize("ranking", ["lexical", "core"])
def test_recall_with_given_pools_equals_retrieve_pools_on_every_row(
    open_, pools, ranking
):
    store = open_("ada", pools=pools, ranking=ranking)
    entries = mixed_history(120)
    store.import_jsonl(jsonl(*entries))
    active = [e for e in entries if poolsplit.default_is_active(e)]
    admitted = {
        t
        for p in pools
        for t in (p.types if p.types is not None else [e["type"] for e in entries])
    }
    loadable = [e for e in active if e["type"] in admitted]
    context = {"message": "billing", "tags": [], "project": None}
    expected = ranked(loadable, pools, context, ranking)
    recall = store.recall("billing", now=NOW)
    assert unstamped(recall.pools) == expected
    assert unstamped(store.recall("billing", now=NOW).pools) == expected  # cached
    unadmitted_always = [
        e["id"]
        for e in active
        if e.get("scope") == "always" and e["type"] not in admitted
    ]
    for ident in unadmitted_always:
        assert any(repr(ident) in w for w in recall.warnings)


any_char = st.characters(blacklist_categories=()) | st.sampled_from(["\x00", "\ud800"])


@given(
    content=st.text(any_char, max_size=30),
    tag=st.text(any_char, max_size=10),
    priority=st.one_of(st.none(), st.floats(), st.integers(-(10**400), 10**400)),
)
@example(content="a\x00b", tag="t", priority=None)
@example(content="lone \udc80", tag="t", priority=None)
@example(content="ok", tag="\x00", priority=None)
@example(content="ok", tag="t", priority=math.inf)
@example(content="ok", tag="t", priority=10**400)
@example(content="ok", tag="t", priority=1e308)
def test_property_any_value_is_stored_exactly_or_refused_as_invalid_input(
    open_, content, tag, priority
):
    """NUL, lone surrogates, NaN, infinities, huge ints: the one validation
    decides before either backend sees the value, so both agree."""
    try:
        store = open_(fresh())
        try:
            written = store.remember(
                content, tags=[tag], base_priority=priority, now=NOW
            )
        except InvalidInput as exc:
            assert exc.field in {"content", "tags", "base_priority"}
            assert everything(store) == []
            return
        assert store.get(written.id) == written.entry
        assert written.entry["content"] == content
    finally:
        open_.close_all()


# --- a stateful model: the store against a plain dict ------------------------------


def same_memory(model, content, kind, scope, skip=None):
    """The active model entry that is this memory (README: content with
    whitespace normalised, type and scope), or None."""
    wanted = (" ".join(content.split()), kind, scope)
    for ident, entry in model.items():
        if not poolsplit.default_is_active(entry) or ident == skip:
            continue
        if (
            " ".join(entry["content"].split()),
            entry["type"],
            entry.get("scope"),
        ) == wanted:
            return ident
    return None


def remember_in_model(store, model, content, kind, scope, key):
    """A new memory joins the model; the same memory again returns the
    stored id with an idempotent warning (then None: nothing new)."""
    written = store.remember(content, type=kind, scope=scope, key=key, now=NOW)
    same = same_memory(model, content, kind, scope)
    if same is not None:
        assert written.id == same
        assert written.warnings[-1].startswith("idempotent:")
        return None
    model[written.id] = written.entry
    return written.id


def supersede_in_model(store, model, old, content):
    """``old`` retired by a new entry, or by the stored one holding the same
    memory (by itself: nothing changes)."""
    kind = model[old]["type"]
    same = same_memory(model, content, kind, None)
    written = store.remember(content, type=kind, supersedes=old, now=NOW)
    if same == old:
        assert written.id == old
        return
    model[old] = {**model[old], "superseded_by": written.id}
    if same is not None:
        assert written.id == same
    else:
        model[written.id] = written.entry


def update_in_model(store, model, ident, content):
    """The update, unless it would make an active entry repeat another."""
    entry = model[ident]
    if poolsplit.default_is_active(entry) and same_memory(
        model, content, entry["type"], None, ident
    ):
        with pytest.raises(InvalidInput):
            store.update(ident, content=content, scope="context")
        return
    updated = store.update(ident, content=content, scope="context")
    expected = {**entry, "content": content}
    expected.pop("scope", None)
    assert unstamped(updated.entry) == unstamped(expected)
    assert updated.entry["updated_by"] == store.writer.name
    model[ident] = expected


def retry_key_in_model(store, model, first_id, content, kind, scope, key):
    """A remember with a key used before (by ``first_id``): the first call's
    id when content, type and scope match it, else InvalidInput."""
    first = model.get(first_id)
    same = first is not None and (
        first["content"],
        first["type"],
        first.get("scope"),
    ) == (content, kind, scope)
    if not same:
        with pytest.raises(InvalidInput):
            store.remember(content, type=kind, scope=scope, key=key, now=NOW)
        return
    again = store.remember(content, type=kind, scope=scope, key=key, now=NOW)
    assert again.id == first_id


def forget_in_model(model, ident):
    """``ident`` and every entry whose ``superseded_by`` chain ends at it
    leave the model; returns their ids."""
    gone = {ident}
    changed = True
    while changed:
        changed = False
        for other, entry in model.items():
            if other not in gone and entry.get("superseded_by") in gone:
                gone.add(other)
                changed = True
    for other in gone:
        del model[other]
    return gone


def keys_without(keys, ids):
    """The keys still held: a key lives as long as its entry."""
    return {k: v for k, v in keys.items() if v not in ids}


def default_recall(active, message):
    """What retrieve_pools picks from these active entries with the default
    pools (README: DEFAULT_POOLS, then the spill-over pool of the others) and
    the default (lexical) ranking."""
    named = {t for p in DEFAULT_POOLS for t in p.types or ()}
    kinds = {e.get("type", "note") for e in active} - named
    pools = [*DEFAULT_POOLS, Pool(*SPILL_OVER, types=tuple(sorted(kinds)))]
    context = {"message": message, "tags": [], "project": None}
    return ranked(active, pools, context)


def import_in_model(store, model, ident, replace):
    """One imported entry joins the model, unless its id is there and
    ``replace`` is False (InvalidInput); whether it was written."""
    entry = {"id": ident, "type": "fact", "content": f"imported {ident}"}
    if ident in model and not replace:
        with pytest.raises(InvalidInput):
            store.import_jsonl(jsonl(entry), replace=False)
        return False
    assert store.import_jsonl(jsonl(entry), replace=replace) == 1
    model[ident] = entry
    return True


# Draws pick by position in insertion order, never by the random ids'
# sort order: a replayed run must draw the same way (hypothesis checks).
class StoreAgainstModel(RuleBasedStateMachine):
    """The store at ``url`` against a plain dict of its entries (see
    :func:`test_stateful_store_matches_a_dict_model`)."""

    def __init__(self, url):
        super().__init__()
        self.url = url

    @initialize()
    def open(self):
        self.store = open_store(self.url, namespace=fresh())
        self.model: dict[str, dict] = {}  # insertion order, like list()
        self.keys: dict[str, str] = {}

    def teardown(self):
        self.store.close()

    def active(self):
        return [i for i, e in self.model.items() if poolsplit.default_is_active(e)]

    @rule(
        content=st.sampled_from(["alpha", "beta gamma", "billing fix", "delta"]),
        kind=st.sampled_from(["fact", "task", "note", "correction"]),
        always=st.booleans(),
        key=st.one_of(st.none(), st.sampled_from(["k1", "k2"])),
    )
    def remember(self, content, kind, always, key):
        scope = "always" if always else None
        if key in self.keys:
            retry_key_in_model(
                self.store, self.model, self.keys[key], content, kind, scope, key
            )
            return
        written = remember_in_model(self.store, self.model, content, kind, scope, key)
        if key is not None and written is not None:
            self.keys[key] = written

    @precondition(lambda self: self.active())
    @rule(data=st.data(), content=st.sampled_from(["new alpha", "new beta"]))
    def supersede(self, data, content):
        old = data.draw(st.sampled_from(self.active()))
        supersede_in_model(self.store, self.model, old, content)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), content=st.sampled_from(["edited", "edited billing"]))
    def update(self, data, content):
        ident = data.draw(st.sampled_from(list(self.model)))
        update_in_model(self.store, self.model, ident, content)

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def forget(self, data):
        ident = data.draw(st.sampled_from(list(self.model)))
        assert self.store.forget(ident) is True
        self.keys = keys_without(self.keys, forget_in_model(self.model, ident))
        assert self.store.forget(ident) is False

    @rule(ident=st.sampled_from(["imp1", "imp2"]), replace=st.booleans())
    def import_one(self, ident, replace):
        if import_in_model(self.store, self.model, ident, replace):
            self.keys = keys_without(self.keys, {ident})  # replace clears it

    @invariant()
    def lists_and_gets_the_model(self):
        listed = everything(self.store)
        assert [e["id"] for e in listed] == list(self.model)
        assert unstamped(listed) == unstamped(list(self.model.values()))

    @invariant()
    def recalls_what_retrieve_pools_picks(self):
        active = [self.model[i] for i in self.active()]
        expected = default_recall(active, "billing alpha")
        got = self.store.recall("billing alpha", now=NOW).pools
        assert unstamped(got) == unstamped(expected)


def test_stateful_store_matches_a_dict_model(store_url):
    """Random remember / supersede / keyed retry / update / forget / import
    sequences; after every step the store lists exactly the model's entries in
    insertion order, gets each, and recalls what retrieve_pools picks from
    the model's active entries."""
    run_state_machine_as_test(
        lambda: StoreAgainstModel(store_url),
        settings=settings(max_examples=30, stateful_step_count=15, deadline=None),
    )


json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
planted_body = st.one_of(
    # mostly not JSON at all (no NUL or surrogate: no database stores them)
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=30,
    ),
    json_values.map(json.dumps),  # any JSON value
    st.fixed_dictionaries(  # an entry with any value in any known field
        {"content": json_values},
        optional={
            field: json_values
            for field in ("type", "scope", "tags", "base_priority", "status", "created")
        },
    ).map(json.dumps),
)


@given(
    bodies=st.lists(
        st.tuples(
            planted_body,
            st.sampled_from([None, "always"]),
            st.sampled_from(["note", "fact", "correction"]),
        ),
        max_size=6,
    )
)
def test_property_no_planted_row_disables_recall(open_, store_url, bodies):
    """Whatever rows another tool writes, recall answers, the good always
    entry still loads, and every row left out is named."""
    try:
        namespace = fresh()
        store = open_(namespace)
        good = store.remember(
            "Never force-push", type="correction", scope="always", now=NOW
        )
        store.recall("warm", now=NOW)
        planted = []
        for number, (body, scope, kind) in enumerate(bodies):
            ident = f"p{number}"
            plant(store_url, namespace, ident, body, type=kind, scope=scope)
            planted.append(ident)
        recall = store.recall("force push", now=NOW)
        assert good.id in recall.ids()["corrections"]
        assert {s.id for s in recall.skipped} <= set(planted)
        for skipped in recall.skipped:
            assert skipped.reason
        for ident in planted:
            assert isinstance(store.get(ident), dict)
        assert len(everything(store)) == len(planted) + 1
        store.explain("force push", now=NOW)
    finally:
        open_.close_all()


@pytest.mark.parametrize("ident", ["", "x" * 300, " "])
def test_a_planted_row_with_an_id_no_write_accepts_can_be_fixed_or_forgotten(
    open_, store_url, ident
):
    store = open_("ada")
    body = {"id": ident, "type": "correction", "scope": "always", "content": "rule"}
    bad = {**body, "base_priority": "high"}
    plant(store_url, "ada", ident, bad, type="correction", scope="always")
    recall = store.recall("x", now=NOW)
    assert [s.id for s in recall.skipped] == [ident]
    assert f"{ident!r} could not be loaded" in recall.text  # "fix or forget it"
    with pytest.raises(InvalidInput) as info:  # no write stores such an id
        store.update(ident, base_priority=5)
    assert info.value.field == "id"
    assert "forget it and remember its content again" in str(info.value)
    assert store.get(ident)["content"] == "rule"
    assert store.forget(ident) is True
    assert store.recall("x", now=NOW).skipped == []
    assert store.get(ident) is None
    assert store.forget(ident) is False


@pytest.mark.parametrize("body_id", [None, "other"])
def test_a_body_whose_id_is_missing_or_differs_is_read_under_the_rows_id(
    open_, store_url, body_id
):
    store = open_("ada")
    kept = store.remember("kept", type="fact", now=NOW)
    body = {"type": "fact", "content": "planted fact"}
    if body_id is not None:
        body["id"] = body_id
    plant(store_url, "ada", "row", body, type="fact")
    assert store.get("row")["id"] == "row"
    assert set(store.recall("anything?", now=NOW).ids()["facts"]) == {"row", kept.id}
    updated = store.update("row", content="changed fact")
    assert updated.entry["id"] == "row"
    assert store.get(kept.id)["content"] == "kept"  # no other row was touched
    assert store.get("row")["content"] == "changed fact"
    store.remember("new", type="fact", supersedes="row", now=NOW)
    assert store.get("row")["superseded_by"]
    assert store.forget("row") is True
    assert store.get("row") is None
    assert len(store.list().entries) == 2  # kept and new


def test_the_lexical_ranking_matches_stems_alike_on_both_backends(open_):
    """Porter stems and the namespace's statistics: 'painting' finds
    'paints', the rarer shared term ranks first, and explain shows the
    factor; the same on every backend (the expected ids are fixed)."""
    store = open_("ada", pools=[Pool("all", 1000, 2)])
    rows = [
        ("a", "Ada paints sunsets every weekend"),
        ("b", "Bob paints fences"),
        ("c", "The weekend market opens early"),
        ("d", "Sunsets at the lake"),
        ("e", "Billing runs on the first weekend"),
    ]
    store.import_jsonl(
        jsonl(*({"id": i, "content": c, "type": "fact"} for i, c in rows))
    )
    assert store.recall("painting sunsets", now=NOW).ids()["all"] == ["a", "d"]
    explained = store.explain("painting sunsets", now=NOW)
    assert "- a: x" in explained and "(paint, sunset)" in explained


# --- issue 48: the user's time zone, and the times read outside the lock ------

# 20:00 UTC on Tuesday 9 May 2023 is 05:00 on Wednesday 10 May in Tokyo.
TOKYO_EVENING = datetime(2023, 5, 9, 20, 0, tzinfo=timezone.utc)


def walks(open_):
    """Two walks: "harbour" on Tokyo's yesterday (9 May, 19:00 there; 10:00
    UTC, UTC's today) and "park" on UTC's yesterday (8 May, 10:00 UTC; 19:00
    on 8 May in Tokyo, its day before yesterday)."""
    store = open_("ada", pools=[Pool("all", 1000, 1)])
    store.import_jsonl(
        jsonl(
            {
                "id": "harbour",
                "content": "we walked to the harbour",
                "created": "2023-05-09T10:00:00+00:00",
            },
            {
                "id": "park",
                "content": "we walked to the park",
                "created": "2023-05-08T10:00:00+00:00",
            },
        )  # fmt: skip
    )
    return store


def test_yesterday_is_the_users_yesterday_in_their_time_zone(open_):
    store = walks(open_)
    message = "where did we walk yesterday?"
    got = store.recall(message, now=TOKYO_EVENING, tz="Asia/Tokyo")
    assert got.ids()["all"] == ["harbour"]
    assert store.recall(message, now=TOKYO_EVENING).ids()["all"] == ["park"]
    # now's own tzinfo when no tz is given
    tokyo_now = TOKYO_EVENING.astimezone(timezone(timedelta(hours=9)))
    assert store.recall(message, now=tokyo_now).ids()["all"] == ["harbour"]
    explained = store.explain(message, now=TOKYO_EVENING, tz="Asia/Tokyo")
    assert explained == store.explain(message, now=tokyo_now)


@pytest.mark.parametrize(
    ("tz", "shown"),
    [
        ("Mars/Olympus", "'Mars/Olympus'"),
        ("", "''"),
        ("../etc/passwd", "'../etc/passwd'"),
        ("x" * 100, "'" + "x" * 40 + "'... (100 characters)"),
    ],
)
def test_a_bad_time_zone_is_named(open_, tz, shown):
    store = walks(open_)
    for call in (store.recall, store.explain):
        with pytest.raises(InvalidInput) as info:
            call("yesterday", now=TOKYO_EVENING, tz=tz)
        assert info.value.field == "tz"
        assert str(info.value) == (
            f"tz: must be an IANA time zone name such as 'Europe/Paris', got {shown}"
        )
    with pytest.raises(InvalidInput, match="^tz: must be a str or None, got int$"):
        store.recall("yesterday", tz=9)


def test_the_times_in_a_message_are_read_outside_the_namespace_lock(open_, monkeypatch):
    """A message full of times cost seconds to read, and it was read while
    the namespace's lock was held, stalling every other recall of it."""
    from poolsplit_memory import _when

    store = walks(open_)
    held = []
    candidates = _when._candidates

    def watched(message, ctx):
        held.append(store._cache_lock.locked())
        return candidates(message, ctx)

    monkeypatch.setattr(_when, "_candidates", watched)
    store.recall("where did we walk yesterday?", now=TOKYO_EVENING)
    store.explain("where did we walk yesterday?", now=TOKYO_EVENING)
    assert held == [False, False]
