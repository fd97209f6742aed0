"""PoolsplitWarning for configurations that silently read otherwise than meant.

A near-miss ``scope`` ("Always") and a context key the default scorer does not
read ("mesage") each lose memory without an error; retrieval says so, once per
call, and explain() says why a zero-cap pool turned an entry away.
"""

import warnings
from datetime import datetime, timezone

import pytest

from poolsplit import Pool, PoolsplitWarning, explain, retrieve, retrieve_pools

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CORE = Pool("corrections", 0, 0, ("correction",))
WORK = Pool("work", 100, 3, ("task",))


def ids(entries):
    return [e["id"] for e in entries]


def caught_messages(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    assert all(w.category is PoolsplitWarning for w in caught)
    return result, [str(w.message) for w in caught]


# --- a scope that is "always" only after trimming and case-folding ---------------


def test_near_miss_scope_warns_in_retrieve_pools_naming_position_and_id():
    store = [
        {"id": "t1", "type": "task", "content": "do it"},
        {"id": "c1", "type": "correction", "scope": "Always", "content": "never"},
    ]
    with pytest.warns(PoolsplitWarning) as caught:
        got = retrieve_pools(store, [CORE, WORK], now=NOW)
    assert got == {"corrections": [], "work": [store[0]]}  # lost, and now said so
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "1 active entries have a scope that is 'always' only after trimming and "
        "case-folding, so they compete for room instead of loading "
        "unconditionally: entries[1] (id='c1') with scope 'Always'; write "
        "scope='always'"
    )
    assert caught[0].filename == __file__  # points at the caller


def test_near_miss_scope_warns_in_retrieve_too():
    store = [{"id": "c1", "type": "correction", "scope": " ALWAYS\n"}]
    with pytest.warns(PoolsplitWarning, match=r"entries\[0\] \(id='c1'\) with scope "):
        assert retrieve(store, CORE, now=NOW) == []


@pytest.mark.parametrize(
    "scope", ["Always", "ALWAYS", " always", "always\t", "ALWAYS "]
)
def test_every_folded_spelling_warns(scope):
    store = [{"id": "c", "type": "correction", "scope": scope}]
    with pytest.warns(PoolsplitWarning, match="only after trimming"):
        retrieve_pools(store, [CORE], now=NOW)


def test_one_warning_per_call_counting_the_rest_and_an_object_listed_twice_once():
    twice = {"id": "dup", "scope": "Always"}
    store = [{"id": i, "scope": "Always"} for i in range(4)] + [twice, twice]
    _, messages = caught_messages(lambda: retrieve_pools(store, [WORK], now=NOW))
    assert len(messages) == 1
    assert messages[0].startswith("5 active entries have a scope")
    assert "entries[2] (id=2) with scope 'Always' and 2 more;" in messages[0]


@pytest.mark.parametrize(
    "entry",
    [
        {"scope": "always"},  # exact: loads
        {"scope": "sometimes"},
        {"scope": "al ways"},
        {"scope": 1},
        {"scope": None},
        {"scope": "Always", "status": "archived"},  # inactive: never loads anyway
        {"scope": "Always", "superseded_by": "x"},
    ],
)
def test_no_scope_warning_for_exact_other_or_inactive(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools([{"id": "e", **entry}], [Pool("all", 10, 1)], now=NOW)
        retrieve([{"id": "e", **entry}], Pool("all", 10, 1), now=NOW)


def test_near_miss_scope_still_competes_as_a_context_entry():
    store = [{"id": "c", "scope": "Always", "content": "x" * 8}]
    with pytest.warns(PoolsplitWarning):
        assert ids(retrieve(store, Pool("all", 2, 1), now=NOW)) == ["c"]


# --- a context key the default scorer does not read ------------------------------


def test_misspelled_context_key_warns_naming_it_and_the_nearest_key():
    store = [{"id": "t", "type": "task", "content": "billing export"}]
    context = {"mesage": "billing"}
    with pytest.warns(PoolsplitWarning) as caught:
        retrieve_pools(store, [WORK], context, now=NOW)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "context key 'mesage' (nearest: 'message') is not read by the default "
        "scorer, which reads only 'message', 'tags', 'project'; the call scored "
        "as if it were absent"
    )
    assert caught[0].filename == __file__


def test_every_unread_context_key_is_named_in_one_warning():
    context = {"tag": ["a"], "projet": "p", "message": "m", 7: "x"}
    _, messages = caught_messages(
        lambda: retrieve([{"id": "t"}], WORK, context, now=NOW)
    )
    assert len(messages) == 1
    assert messages[0].startswith(
        "context key 'tag' (nearest: 'tags'), 'projet' (nearest: 'project'), "
        "7 (nearest: "
    )


def test_an_unread_key_far_from_every_key_still_names_the_nearest():
    """'pj' is far from every key the scorer reads (difflib's ratio 0.44 with
    'project', under its usual 0.6 cutoff): the nearest is still named."""
    _, messages = caught_messages(
        lambda: retrieve([{"id": "t"}], WORK, {"pj": "p"}, now=NOW)
    )
    assert messages == [
        "context key 'pj' (nearest: 'project') is not read by the default "
        "scorer, which reads only 'message', 'tags', 'project'; the call scored "
        "as if it were absent"
    ]


def test_known_context_keys_and_no_context_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context = {"message": "m", "tags": ["a"], "project": "p"}
        retrieve_pools([{"id": "t"}], [WORK], context, now=NOW)
        retrieve_pools([{"id": "t"}], [WORK], None, now=NOW)
        retrieve([{"id": "t"}], WORK, {}, now=NOW)


def test_a_custom_scorer_may_read_any_context_key():
    def scorer(entry, context, *, now):
        return float(len(context["mood"]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = retrieve(
            [{"id": "t"}], Pool("all", 9, 1), {"mood": "calm"}, scorer=scorer, now=NOW
        )
    assert ids(got) == ["t"]


# --- explain says why a zero-cap pool turned an entry away ----------------------


def test_explain_says_only_always_loads_in_a_max_entries_zero_pool():
    store = [
        {"id": "c1", "type": "correction", "content": "no scope"},
        {"id": "c2", "type": "correction", "scope": "Always", "content": "near"},
        {"id": "c3", "type": "correction", "scope": "always", "content": "yes"},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # explain reports, it does not warn
        report = explain(store, [CORE], {"mesage": "x"}, now=NOW)
    got = {d.id: (d.outcome, d.reason) for d in report.decisions}
    only = "max_entries=0: only scope='always' loads in this pool"
    assert got == {
        "c1": ("entry_cap", only),
        "c2": ("entry_cap", only),
        "c3": ("always", None),
    }
    assert report.warnings[0] == (
        f"pool 'corrections' had 2 eligible entries and selected none; {only}"
    )
    assert len(report.warnings) == 4  # and the always-scope total past the caps
    assert report.warnings[1].startswith("context key 'mesage' (nearest: 'message')")
    assert report.warnings[-1].startswith(
        "1 active entries have a scope that is 'always' only after trimming"
    )
    assert f"entry_cap:{only}" in report.render()


def test_explain_says_only_always_loads_in_a_max_tokens_zero_pool():
    store = [{"id": "t", "type": "task", "content": "x"}]
    report = explain(store, [Pool("p", 0, 5)], now=NOW)
    assert report.decisions[0].outcome == "over_tokens"
    assert report.decisions[0].reason == (
        "max_tokens=0: only scope='always' loads in this pool"
    )


def test_explain_gives_no_zero_cap_reason_in_a_pool_with_room():
    store = [{"id": "a", "content": "x" * 40}, {"id": "b", "content": "y"}]
    report = explain(store, [Pool("p", 5, 1)], now=NOW)
    assert [(d.outcome, d.reason) for d in report.decisions] == [
        ("over_tokens", None),
        ("selected", None),
    ]


# --- an always-scope entry no pool admits --------------------------------------


def unadmitted_message(count):
    store = [{"id": str(n), "type": "x", "scope": "always"} for n in range(count)]
    with pytest.warns(PoolsplitWarning) as caught:
        retrieve_pools(store, [Pool("p", 100, 1, types=["y"])], now=NOW)
    assert len(caught) == 1
    return str(caught[0].message)


STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


def test_warning_names_count_position_id_and_type():
    pools = [Pool("core", 0, 0, ("correction",)), Pool("work", 10, 2, ("task",))]
    with pytest.warns(PoolsplitWarning) as caught:
        got = retrieve_pools(STORE, pools, now=NOW)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "1 active always-scope entries are in no pool, so they were not loaded: "
        "entries[1] (id='c2') of type 'corection'; add their types to a pool, "
        "or add a pool with types=None"
    )
    assert caught[0].filename == __file__  # points at the caller
    assert ids(got["core"]) == ["c1"]


def test_warning_lists_the_first_three_and_counts_the_rest():
    store = [{"id": i, "type": f"t{i}", "scope": "always"} for i in range(5)]
    with pytest.warns(
        PoolsplitWarning,
        match=r"^5 active .*entries\[2\] \(id=2\) "
        r"of type 't2' and 2 more; ",
    ):
        retrieve_pools(store, [Pool("p", 1, 1, ("x",))], now=NOW)


def test_no_warning_when_every_always_type_is_admitted():
    pools = [Pool("core", 0, 0, ("correction", "corection")), Pool("w", 9, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools(STORE, pools, now=NOW)
        retrieve_pools(STORE, [Pool("all", 0, 0)], now=NOW)  # types=None admits all


def test_no_warning_for_inactive_always_entries_or_single_retrieve():
    store = [{"id": "old", "type": "x", "scope": "always", "status": "archived"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools(store, [Pool("p", 1, 1, ("y",))], now=NOW)
        # retrieve() asks for one pool: other types are not missing, only not asked
        retrieve(STORE, Pool("core", 0, 0, ("correction",)), now=NOW)


def test_warning_is_an_error_under_error_filter():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PoolsplitWarning)
        with pytest.raises(PoolsplitWarning):
            retrieve_pools(STORE, [Pool("core", 0, 0, ("correction",))], now=NOW)


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (1, "entries[0] (id='0') of type 'x'"),
        (
            3,
            "entries[0] (id='0') of type 'x', entries[1] (id='1') of type 'x', "
            "entries[2] (id='2') of type 'x'",
        ),
        (
            4,
            "entries[0] (id='0') of type 'x', entries[1] (id='1') of type 'x', "
            "entries[2] (id='2') of type 'x' and 1 more",
        ),
    ],
)
def test_unadmitted_warning_shows_three_then_counts_the_rest(count, shown):
    """The warning names the first three entries and counts the others."""
    assert unadmitted_message(count) == (
        f"{count} active always-scope entries are in no pool, so they were not "
        f"loaded: {shown}; add their types to a pool, or add a pool with types=None"
    )


def test_the_warnings_say_which_keys_the_default_scorer_reads():
    """The full texts, checked where the caller's line is not (mutmut runs
    the two tests above through a trampoline, so it deselects them)."""
    store = [{"id": "c1", "type": "correction", "scope": "Always"}]
    _, messages = caught_messages(
        lambda: retrieve(store, CORE, {"mesage": "x"}, now=NOW)
    )
    assert messages == [
        "context key 'mesage' (nearest: 'message') is not read by the default "
        "scorer, which reads only 'message', 'tags', 'project'; the call scored "
        "as if it were absent",
        "1 active entries have a scope that is 'always' only after trimming and "
        "case-folding, so they compete for room instead of loading "
        "unconditionally: entries[0] (id='c1') with scope 'Always'; write "
        "scope='always'",
    ]
