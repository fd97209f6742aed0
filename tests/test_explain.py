import json
import warnings
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from poolsplit import Pool, PoolsplitWarning, explain, retrieve_pools

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

entry_st = st.fixed_dictionaries(
    {"id": st.integers(0, 20), "content": st.text(max_size=30)},
    optional={
        "type": st.sampled_from(["task", "fact", "skill"]),
        "scope": st.sampled_from(["always", "context"]),
        "status": st.sampled_from(["active", "archived"]),
        "superseded_by": st.sampled_from([None, "x"]),
        "base_priority": st.integers(0, 10),
        "token_count": st.integers(1, 20),
    },
)
pool_st = st.builds(
    Pool,
    name=st.sampled_from(["a", "b", "c"]),
    max_tokens=st.integers(0, 40),
    max_entries=st.integers(0, 4),
    types=st.one_of(st.none(), st.lists(st.sampled_from(["task", "fact", "skill"]))),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(entry_st, max_size=15),
    st.lists(pool_st, max_size=3, unique_by=lambda p: p.name),
)
def test_selected_equals_retrieve_pools(store, pools):
    report = explain(store, pools, now=NOW)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoolsplitWarning)  # an unadmitted entry
        expected = retrieve_pools(store, pools, now=NOW)
    got = report.selected()
    assert list(got) == list(expected)
    for name in expected:
        assert [id(e) for e in got[name]] == [id(e) for e in expected[name]]
    assert len(report.decisions) == len(store)
    json.dumps(report.to_dict())
    for d in report.decisions:
        if d.outcome in ("selected", "always"):
            assert any(store[d.index] is e for e in expected[d.pool])


def test_outcomes_and_summaries():
    store = [
        {"id": "c", "type": "correction", "scope": "always", "content": "x" * 8},
        {"id": "t1", "type": "task", "content": "a", "base_priority": 9},
        {
            "id": "t2",
            "type": "task",
            "content": "b",
            "base_priority": 8,
            "token_count": 50,
        },
        {"id": "t3", "type": "task", "content": "c", "base_priority": 7},
        {"id": "old", "superseded_by": "t1"},
        {"id": "arch", "status": "archived"},
        {"id": "g", "type": "growth", "scope": "always", "content": "g"},
        {"id": "z", "type": "zz"},
    ]
    pools = [
        Pool("core", 0, 0, ["correction"]),
        Pool("work", 10, 1, ["task"]),
        Pool("all", 60, 1, ["task"]),
        Pool("empty", 0, 0, ["task"]),
    ]
    report = explain(store, pools, now=NOW)
    got = {d.id: (d.outcome, d.pool, d.reason) for d in report.decisions}
    assert got == {
        "c": ("always", "core", None),
        "t1": ("selected", "work", None),
        "t2": ("selected", "all", None),
        "t3": ("entry_cap", "work", None),
        "old": ("inactive", None, "superseded"),
        "arch": ("inactive", None, "status"),
        "g": ("no_pool", None, None),
        "z": ("no_pool", None, None),
    }
    t1 = report.decisions[1]
    assert (t1.score, t1.cost, t1.used) == (9.0, 1, 1)
    assert report.decisions[0].used is None
    work = report.pools[1]
    assert (work.tokens_used, work.entries_used, work.left_out) == (1, 1, 2)
    assert (report.pools[0].always_count, report.pools[0].always_tokens) == (1, 2)
    assert report.warnings == (
        "always-scope entry 'g' of type 'growth' is in no pool",
        "pool 'empty' had 1 eligible entries and selected none; "
        "max_entries=0: only scope='always' loads in this pool",
    )
    t2_steps = [
        (s.pool, s.outcome)
        for s in report.steps
        if report.entries[s.index]["id"] == "t2"
    ]
    assert t2_steps == [
        ("work", "entry_cap"),
        ("all", "selected"),
        ("empty", "taken_earlier"),
    ]
    assert t1.taken_earlier_in == ("all", "empty")
    assert report.decisions[2].taken_earlier_in == ("empty",)
    assert report.always_tokens == 2
    text = report.render()
    assert text.splitlines()[0] == (
        "#  id    type        outcome              pool  score  cost  total"
        "  later pools"
    )
    assert (
        "1  t1    task        selected             work  9.000  1     1      all,empty"
        in text
    )
    assert "always-scope total: 2 tokens\n" in text
    assert (
        "pool work: tokens 1/10, entries 1/1, left out 2, always 0 (0 tokens)" in text
    )
    assert text.endswith(
        "warning: pool 'empty' had 1 eligible entries and selected none; "
        "max_entries=0: only scope='always' loads in this pool\n"
    )


def test_custom_predicate_and_odd_values():
    store = [{"id": None, "type": ("t",)}, {"id": 3}]
    report = explain(
        store, [Pool("p", 10, 5)], is_active=lambda e: e["id"] == 3, now=NOW
    )
    assert report.decisions[0].reason == "predicate"
    data = report.to_dict()
    assert data["decisions"][0]["type"] == "('t',)"
    assert data["decisions"][0]["id"] is None
    assert data["pools"][0]["name"] == "p"
    assert (
        report.render().splitlines()[1].startswith("0      ('t',)  inactive:predicate")
    )


def test_warns_when_always_tokens_exceed_budget():
    store = [{"id": "c", "scope": "always", "content": "x" * 40}]
    report = explain(store, [Pool("p", 5, 1)], now=NOW)
    assert report.warnings == (
        "always-scope entries cost 10 tokens, more than the 5 of all pools' "
        "max_tokens together",
    )


def test_same_object_listed_twice_is_a_duplicate_decision():
    entry = {"id": "d", "type": "task", "content": "x"}
    report = explain([entry, {"id": "e"}, entry], [Pool("p", 10, 5)], now=NOW)
    assert [(d.outcome, d.reason) for d in report.decisions] == [
        ("selected", None),
        ("selected", None),
        ("duplicate", "entries[0]"),
    ]
    assert report.selected() == {"p": [entry, {"id": "e"}]}
    assert "2  d   task  duplicate:entries[0]" in report.render()


def test_warns_when_always_tokens_are_large_but_within_budget():
    store = [{"id": "c", "scope": "always", "content": "x" * 4004}]
    report = explain(store, [Pool("p", 1500, 1)], now=NOW)
    assert report.always_tokens == 1001
    assert report.warnings == (
        "always-scope entries cost 1001 tokens, which no cap limits (more than "
        "4000 or half of the 1500 of all pools' max_tokens); check who may write "
        "scope='always'",
    )
    assert report.to_dict()["always_tokens"] == 1001
    quiet = explain(store, [Pool("p", 2002, 1)], now=NOW)
    assert quiet.warnings == ()
