import json
import warnings
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import poolsplit
from poolsplit import (
    Pool,
    PoolsplitWarning,
    default_scorer,
    explain,
    retrieve_pools,
)

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
        "  other pools"
    )
    assert (
        "1  t1    task        selected             work  9.000  1     1      "
        "all:taken_earlier,empty:taken_earlier" in text
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


# --- explain at scale: every pool's outcome, filters, a summary (issue 21) -------

SCALE_STORE = [
    {"id": "t1", "type": "task", "content": "a", "base_priority": 9},
    {"id": "t2", "type": "task", "content": "b", "base_priority": 8, "token_count": 50},
    {"id": "c1", "type": "correction", "content": "no scope"},
    {"id": 7, "type": "fact", "content": "f"},
    {"id": "old", "type": "task", "status": "archived"},
]
SCALE_POOLS = [
    Pool("core", 0, 0, ["correction"]),
    Pool("work", 10, 1, ["task"]),
    Pool("all", 60, 3),
]


def test_each_decision_lists_its_outcome_in_every_pool_that_admitted_it():
    report = explain(SCALE_STORE, SCALE_POOLS, now=NOW)
    got = {d.id: (d.outcome, d.pool, d.outcomes) for d in report.decisions}
    assert got == {
        "t1": ("selected", "work", (("work", "selected"), ("all", "taken_earlier"))),
        "t2": ("selected", "all", (("work", "entry_cap"), ("all", "selected"))),
        "c1": ("selected", "all", (("core", "entry_cap"), ("all", "selected"))),
        7: ("selected", "all", (("all", "selected"),)),
        "old": ("inactive", None, ()),
    }
    decisions = report.to_dict()["decisions"]
    assert decisions[2]["outcomes"] == {"core": "entry_cap", "all": "selected"}
    assert decisions[4]["outcomes"] == {}
    assert "core:entry_cap" in report.render().splitlines()[3]


def test_filters_keep_the_decisions_asked_for_and_the_whole_stores_pools():
    full = explain(SCALE_STORE, SCALE_POOLS, now=NOW)

    def kept(**filters):
        report = explain(SCALE_STORE, SCALE_POOLS, now=NOW, **filters)
        assert (report.pools, report.warnings, report.steps) == (
            full.pools,
            full.warnings,
            full.steps,
        )
        assert report.selected() == full.selected()
        return [d.id for d in report.decisions]

    assert kept(ids=["t2", 7, "nope"]) == ["t2", 7]
    assert kept(ids=iter(["c1"])) == ["c1"]
    assert kept(types=["task"]) == ["t1", "t2", "old"]
    assert kept(outcomes=["inactive"]) == ["old"]
    # an outcome in any pool counts, not only the decisive one
    assert kept(outcomes=["entry_cap"]) == ["t2", "c1"]
    assert kept(outcomes=["over_tokens", "below_floor"]) == []
    assert kept(outcomes=["taken_earlier"]) == ["t1"]
    assert kept(types=["task"], outcomes=["selected"], ids=["t1", "c1"]) == ["t1"]
    assert kept(ids=[]) == []
    assert kept(ids=None, types=None, outcomes=None) == ["t1", "t2", "c1", 7, "old"]


@pytest.mark.parametrize(
    ("filters", "error", "message"),
    [
        ({"ids": "t1"}, TypeError, "ids must be an iterable or None, got str 't1'"),
        ({"types": 3}, TypeError, "types must be an iterable or None, got int 3"),
        (
            {"outcomes": ["selcted"]},
            ValueError,
            "outcomes must be among 'always', 'selected', 'over_tokens', "
            "'entry_cap', 'below_floor', 'taken_earlier', 'inactive', "
            "'duplicate', 'no_pool', got 'selcted'",
        ),
    ],
)
def test_bad_filters_raise(filters, error, message):
    with pytest.raises(error) as caught:
        explain(SCALE_STORE, SCALE_POOLS, now=NOW, **filters)
    assert str(caught.value) == message


def test_summary_leaves_out_the_rows_and_counts_each_outcome():
    report = explain(SCALE_STORE, SCALE_POOLS, now=NOW)
    assert report.counts() == {"selected": 4, "inactive": 1}
    assert report.render(summary=True) == (
        "outcomes: selected 4, inactive 1\n"
        "pool core: tokens 0/0, entries 0/0, left out 1, always 0 (0 tokens)\n"
        "pool work: tokens 1/10, entries 1/1, left out 1, always 0 (0 tokens)\n"
        "pool all: tokens 53/60, entries 3/3, left out 0, always 0 (0 tokens)\n"
        "always-scope total: 0 tokens\n"
        "warning: pool 'core' had 1 eligible entries and selected none; "
        "max_entries=0: only scope='always' loads in this pool\n"
    )
    assert report.render().endswith(report.render(summary=True))
    data = report.to_dict(summary=True)
    assert "decisions" not in data
    assert data["counts"] == {"selected": 4, "inactive": 1}
    assert len(report.to_dict()["decisions"]) == 5
    empty = explain([], SCALE_POOLS, now=NOW)
    assert empty.render(summary=True).startswith("outcomes: none\n")


def test_a_50000_entry_store_summarises_in_a_few_lines():
    store = [
        {"id": i, "type": ("task", "fact")[i % 2], "content": "x" * (i % 50)}
        for i in range(50_000)
    ]
    pools = [Pool("work", 400, 5, ["task"]), Pool("rest", 400, 5)]
    report = explain(store, pools, now=NOW, outcomes=["selected"])
    assert len(report.decisions) == 10
    text = explain(store, pools, now=NOW).render(summary=True)
    assert len(text.splitlines()) == 4
    assert text.startswith("outcomes: entry_cap 49990, selected 10\n")


# --- warnings, JSON, steps, errors ---------------------------------------------


STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


def test_explain_warns_about_a_pool_whose_types_match_no_entry():
    pools = [Pool("core", 0, 0, ("corrections",)), Pool("work", 9, 1, ("task",))]
    report = explain(STORE, pools, now=NOW)
    assert (
        "pool 'core' admits types ['corrections'], and no entry of the store has "
        "one of them; check their spelling"
    ) in report.warnings
    assert not any("'work' admits" in w for w in report.warnings)


def test_explain_says_an_empty_types_pool_admits_nothing():
    report = explain(STORE, [Pool("none", 9, 1, ()), Pool("all", 9, 9)], now=NOW)
    assert "pool 'none' has types=(), so it admits nothing" in report.warnings
    assert not any("check their spelling" in w for w in report.warnings)


def test_explain_json_writes_an_infinite_score_as_a_string():
    report = explain([{"id": "a", "base_priority": 1e999}], [Pool("p", 99, 1)], now=NOW)
    decision = report.to_dict()["decisions"][0]
    assert decision["score"] == "inf"
    json.loads(json.dumps(report.to_dict(), allow_nan=False))


def test_explain_reads_each_step_a_constant_number_of_times():
    """4: explain filtered every step once per pool, quadratic in pools.

    Counted, not timed: how often a step's pool is read, for 20 and 40 pools.
    Linear work doubles; the old per-pool filtering quadrupled.
    """
    reads = []

    class CountingStep(poolsplit.Step):
        def __getattribute__(self, name):
            if name == "pool":
                reads.append(1)
            return object.__getattribute__(self, name)

    store = [
        {
            "id": i,
            "type": f"t{i % 10}",
            "content": "x",
            "scope": "always" * (i % 7 == 0),
        }
        for i in range(200)
    ]
    counts = []
    for pools in (20, 40):
        reads.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(poolsplit, "Step", CountingStep)
            explain(
                store,
                [
                    Pool(f"p{k}", 3, 1, (f"t{k % 10}", f"t{(k + 1) % 10}"))
                    for k in range(pools)
                ],
                now=NOW,
            )
        counts.append(len(reads))
    assert counts[0] > 0
    assert counts[1] <= 2.2 * counts[0]


def test_explain_of_a_large_store_has_one_step_per_entry_and_pool():
    """Above 16,384 ranked entries each entry is still decided once per pool."""
    store = [{"id": n, "base_priority": n % 1000} for n in range(16400)]
    steps = explain(store, [Pool("p", 100, 1)], now=NOW).steps
    assert len(steps) == len(store)
    assert len({step.index for step in steps}) == len(store)


def test_explain_names_the_always_entry_whose_cost_cannot_be_read():
    """explain's pool summaries cost each always-scope entry loaded; one
    whose content cannot become text fails, named by its own position."""

    class Unreadable:
        def __str__(self):
            raise ValueError("cannot become text")

    store = [
        {"id": "c", "scope": "always", "content": "fine"},
        {"id": "t", "content": "x"},
        {"id": "u", "scope": "always", "content": Unreadable()},
    ]
    with pytest.raises(ValueError, match=r"^entries\[2\] \(id='u'\): cannot become"):
        explain(store, [Pool("p", 10, 1)], now=NOW)


def test_explain_scores_with_the_message_as_retrieval_does():
    """explain() reports exact scores, the message term included: its first
    scores are never the base score alone."""
    store = [
        {"id": "m", "base_priority": 4, "content": "deploy the cluster"},
        {"id": "n", "base_priority": 6, "content": "other words"},
    ]
    context = {"message": "deploy cluster"}
    report = explain(store, [Pool("p", 100, 1)], context, now=NOW)
    assert [(d.id, d.score) for d in report.decisions] == [
        ("m", default_scorer(store[0], context, now=NOW)),
        ("n", 6.0),
    ]
    assert report.decisions[0].score == 10.0  # 4 x 2.5: both words found
    assert report.selected() == {"p": [store[0]]}


def test_an_entry_below_the_floor_is_not_costed_in_its_decision():
    """A pool turns an entry away for its score before it costs it: the
    decision reports no cost."""
    store = [{"id": "low", "content": "x" * 40, "base_priority": 1}]
    report = explain(store, [Pool("p", 100, 5, min_score=3)], now=NOW)
    assert [(d.outcome, d.cost) for d in report.decisions] == [("below_floor", None)]
