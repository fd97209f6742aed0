"""Example tests for retrieve and retrieve_pools boundaries."""

import types
from datetime import date, datetime, timezone

import pytest
from conftest import NOW

import poolsplit
from poolsplit import Pool, clear_caches, explain, retrieve, retrieve_pools


def ids(entries):
    return [e.get("id") for e in entries]


def flat(score):
    """A scorer that gives every entry the same score."""

    def scorer(entry, context, *, now):
        return score

    return scorer


def by_key(entry, context, *, now):
    return entry.get("s", 0)


# --- budgets --------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_tokens", "max_entries", "expected"),
    [
        (10, 5, ["a", "b"]),  # exact fit 6 + 4
        (9, 5, ["a"]),  # one over: b skipped
        (10, 1, ["a"]),  # entry cap
        (0, 5, []),  # zero tokens
        (10, 0, []),  # zero entries
        (4, 5, ["b"]),  # skip-then-fit: a (6) too big, b (4) fits
        (3, 5, []),
    ],
)
def test_budget_grid(max_tokens, max_entries, expected):
    """Greedy fill by score with skip-and-continue."""
    store = [
        {"id": "a", "token_count": 6, "s": 2},
        {"id": "b", "token_count": 4, "s": 1},
    ]
    got = retrieve(store, Pool("p", max_tokens, max_entries), scorer=by_key, now=NOW)
    assert ids(got) == expected


def test_skip_then_smaller_fits_after_several():
    """A big entry skipped in the middle does not stop the scan."""
    store = [
        {"id": "a", "token_count": 5, "s": 3},
        {"id": "big", "token_count": 50, "s": 2},
        {"id": "c", "token_count": 5, "s": 1},
    ]
    got = retrieve(store, Pool("p", 10, 5), scorer=by_key, now=NOW)
    assert ids(got) == ["a", "c"]


def test_zero_budgets_still_return_always():
    """Always-scope entries bypass both caps."""
    store = [
        {"id": "x", "content": "hello"},
        {"id": "al", "scope": "always", "token_count": 999},
    ]
    assert ids(retrieve(store, Pool("p", 0, 0), now=NOW)) == ["al"]


def test_always_not_counted_against_max_entries():
    """With max_entries=1 an always entry plus one context entry load."""
    store = [
        {"id": "a1", "scope": "always"},
        {"id": "a2", "scope": "always"},
        {"id": "c1", "token_count": 1},
        {"id": "c2", "token_count": 1},
    ]
    got = retrieve(store, Pool("p", 100, 1), now=NOW)
    assert ids(got) == ["a1", "a2", "c1"]


def test_always_entries_in_input_order_first():
    """Always entries precede context entries in input order."""
    store = [
        {"id": "c", "base_priority": 100},
        {"id": "z", "scope": "always"},
        {"id": "a", "scope": "always"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 5), now=NOW)) == ["z", "a", "c"]


def test_typed_pool_excludes_other_types_always_entry():
    """An always entry of another type is not returned by a typed pool."""
    store = [
        {"id": "corr", "type": "correction", "scope": "always"},
        {"id": "sk", "type": "skill"},
        {"id": "n", "scope": "always"},  # type defaults to note
    ]
    assert ids(retrieve(store, Pool("p", 100, 5, types=["skill"]), now=NOW)) == ["sk"]
    assert ids(retrieve(store, Pool("p", 100, 5, types=["note"]), now=NOW)) == ["n"]


def test_inactive_always_entry_not_returned():
    """Inactive entries are filtered even when always-scope."""
    store = [
        {"id": "a", "scope": "always", "status": "archived"},
        {"id": "b", "scope": "always", "superseded_by": "c"},
        {"id": "c", "scope": "always", "status": None},
    ]
    assert ids(retrieve(store, Pool("p", 0, 0), now=NOW)) == ["c"]


def test_unhashable_type_matches_only_untyped_pool():
    """An entry whose type is a list loads only in a types=None pool."""
    store = [{"id": "u", "type": ["x"]}]
    assert ids(retrieve(store, Pool("p", 100, 5), now=NOW)) == ["u"]
    assert retrieve(store, Pool("p", 100, 5, types=["x"]), now=NOW) == []


def test_multi_type_pool_keeps_input_order_for_ties():
    """A pool of two types merges them and ties break by input index."""
    store = [
        {"type": "b"},
        {"type": "a"},
        {"type": "b"},
        {"type": "c"},
    ]
    got = retrieve(store, Pool("p", 100, 5, types=["a", "b", "a"]), now=NOW)
    assert [g is s for g, s in zip(got, store)] == [True, True, True]


def test_pool_type_missing_from_store_returns_nothing():
    """A pool whose type nobody has returns an empty list."""
    assert retrieve([{"type": "a"}], Pool("p", 9, 9, types=["z"]), now=NOW) == []


# --- cost rule ------------------------------------------------------------


class IntSub(int):
    """An int subclass token_count is still a positive int."""


@pytest.mark.parametrize(
    ("token_count", "cost"),
    [
        (3, 3),
        (IntSub(3), 3),
        (True, 2),
        (False, 2),
        (3.0, 2),
        ("3", 2),
        (0, 2),
        (-4, 2),
        (None, 2),
    ],
)
def test_token_count_fallback(token_count, cost):
    """Only a positive int token_count is used; the rest fall back to the counter."""
    entry = {"content": "x" * 8, "token_count": token_count}  # counter says 2
    assert ids(retrieve([entry], Pool("p", cost, 5), now=NOW)) == [None]
    assert retrieve([entry], Pool("p", cost - 1, 5), now=NOW) == []


@pytest.mark.parametrize("counted", [0, -3])
def test_counter_returning_zero_or_less_costs_one(counted):
    """A counter result <= 0 costs 1: never free."""
    store = [{"id": "a"}, {"id": "b"}]
    got = retrieve(store, Pool("p", 1, 5), token_counter=lambda text: counted, now=NOW)
    assert ids(got) == ["a"]
    assert retrieve(store, Pool("p", 0, 5), token_counter=lambda t: counted) == []


def test_counter_int_subclass_accepted():
    """A counter may return an int subclass."""
    got = retrieve([{"id": "a"}], Pool("p", 3, 5), token_counter=lambda t: IntSub(3))
    assert ids(got) == ["a"]


@pytest.mark.parametrize("bad", [1.0, "1", None, True])
def test_counter_non_int_raises(bad):
    """A non-int count names the entry by position and id."""
    store = [{"id": "ok", "token_count": 1}, {"id": "e1"}]
    with pytest.raises(
        TypeError,
        match=r"^token_counter must return an int, got \w+ .* for entries\[1\] "
        r"\(id='e1'\)$",
    ):
        retrieve(store, Pool("p", 10, 5), token_counter=lambda text: bad, now=NOW)


def test_counter_sees_content_as_text():
    """Missing/None content is "" and other values their str()."""
    seen = []

    def counter(text):
        seen.append(text)
        return 1

    store = [{}, {"content": None}, {"content": 42}, {"content": "hi"}]
    retrieve(store, Pool("p", 10, 10), token_counter=counter, scorer=flat(1))
    assert seen == ["", "", "42", "hi"]


# --- scorer results -------------------------------------------------------


def test_scorer_nan_raises_value_error():
    """NaN would break determinism."""
    with pytest.raises(
        ValueError, match=r"^scorer returned NaN for entries\[0\] \(id='n'\)$"
    ):
        retrieve([{"id": "n"}], Pool("p", 1, 1), scorer=flat(float("nan")), now=NOW)


@pytest.mark.parametrize("bad", ["1", None, True, [1], complex(1, 0)])
def test_scorer_non_number_raises_type_error(bad):
    """A non-real score names the entry."""
    with pytest.raises(
        TypeError,
        match=r"^scorer must return a real number, got .* "
        r"for entries\[0\] \(id=None\)$",
    ):
        retrieve([{}], Pool("p", 1, 1), scorer=flat(bad), now=NOW)


def test_infinite_scores_allowed_and_ordered():
    """+inf first, -inf last."""
    store = [
        {"id": "lo", "s": float("-inf")},
        {"id": "mid", "s": 0},
        {"id": "hi", "s": float("inf")},
    ]
    got = retrieve(store, Pool("p", 100, 5), scorer=by_key, now=NOW)
    assert ids(got) == ["hi", "mid", "lo"]


# --- input types ----------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "kind"),
    [(["x"], "str"), ([1], "int"), ([None], "NoneType"), ([("id", "a")], "tuple")],
)
def test_entry_not_mapping_raises(bad, kind):
    """Non-mapping entries name their position and their type."""
    with pytest.raises(
        TypeError, match=rf"^entries\[0\] must be a Mapping, got {kind}$"
    ):
        retrieve(bad, Pool("p", 1, 1), now=NOW)


@pytest.mark.parametrize(
    "bad_score",
    [{"id": "p", "base_priority": "high"}, {"id": "t", "tags": 5}],
)
def test_the_first_problem_in_input_order_is_reported(bad_score):
    """Every path reads the store once, in input order, and reports the first
    entry with a problem: an unscorable entry before a later non-Mapping, a
    non-Mapping before a later unscorable one."""
    pools = [Pool("p", 10, 1)]
    for call in (retrieve_pools, poolsplit.explain):
        with pytest.raises(TypeError, match=r"^entries\[0\] \(id=.*\): "):
            call([bad_score, "not a mapping"], pools, {"message": "deploy"}, now=NOW)
        with pytest.raises(TypeError, match=r"^entries\[0\] must be a Mapping"):
            call(["not a mapping", bad_score], pools, {"message": "deploy"}, now=NOW)


class _EqRaises:
    """A project value whose comparison raises (an exception from a value)."""

    def __eq__(self, other):
        raise RuntimeError("eq boom")

    __hash__ = object.__hash__


def test_an_exception_from_a_value_propagates_in_input_order():
    """An exception raised by a value while scoring (not a TypeError or
    ValueError) propagates unchanged, when its entry is read."""
    pools = [Pool("p", 10, 5)]
    raising = {"id": "a", "base_priority": 5, "project": _EqRaises()}
    with pytest.raises(RuntimeError, match="eq boom"):
        retrieve_pools([raising, "oops"], pools, now=NOW)
    with pytest.raises(TypeError, match=r"^entries\[0\] must be a Mapping"):
        retrieve_pools(["oops", raising], pools, now=NOW)
    bad = {"id": "b", "base_priority": "high"}
    with pytest.raises(TypeError, match=r"^entries\[0\] \(id='b'\): base_priority"):
        retrieve_pools([bad, raising], pools, now=NOW)
    calls = []

    def is_active(entry):
        calls.append(entry["id"])
        if entry["id"] == "c":
            raise LookupError("is_active boom")
        return True

    with pytest.raises(LookupError, match="is_active boom"):
        retrieve_pools([{"id": "b"}, {"id": "c"}], pools, is_active=is_active, now=NOW)
    assert calls == ["b", "c"]
    with pytest.raises(RuntimeError, match="eq boom"):
        retrieve_pools([{"id": "ok"}, raising], pools, now=NOW)


class _Ambiguous:
    """A project value that compares to an object whose truth value raises."""

    def __eq__(self, other):
        return self

    def __bool__(self):
        raise TypeError("ambiguous truth value")

    __hash__ = object.__hash__


def test_a_type_error_from_a_value_names_the_entry_on_every_path():
    """retrieve_pools and explain() report it alike, with the entry's label."""
    store = [{"id": "ok"}, {"id": "x", "base_priority": 5, "project": _Ambiguous()}]
    pools = [Pool("p", 10, 5)]
    expected = r"^entries\[1\] \(id='x'\): ambiguous truth value$"
    for call in (retrieve_pools, poolsplit.explain):
        with pytest.raises(TypeError, match=expected):
            call(store, pools, {"project": "a"}, now=NOW)


def test_entries_not_iterable_raises():
    """entries must be iterable."""
    with pytest.raises(
        TypeError, match=r"^entries must be an iterable of Mapping, got int$"
    ):
        retrieve(5, Pool("p", 1, 1), now=NOW)


def test_pool_item_not_pool_raises():
    """A non-Pool item in pools names its position."""
    with pytest.raises(TypeError, match=r"^pools\[1\] must be a Pool, got dict$"):
        retrieve_pools([], [Pool("a", 1, 1), {"name": "b"}], now=NOW)


def test_single_pool_for_pools_raises():
    """retrieve_pools wants a list of pools, not one."""
    with pytest.raises(
        TypeError, match=r"^pools must be an iterable of Pool, got a single Pool$"
    ):
        retrieve_pools([], Pool("a", 1, 1), now=NOW)


def test_pools_not_iterable_raises():
    """pools must be iterable."""
    with pytest.raises(
        TypeError, match=r"^pools must be an iterable of Pool, got int$"
    ):
        retrieve_pools([], 3, now=NOW)


def test_retrieve_pool_not_pool_raises():
    """retrieve wants a Pool."""
    with pytest.raises(TypeError, match=r"^pool must be a Pool, got list$"):
        retrieve([], [Pool("a", 1, 1)], now=NOW)


def test_duplicate_pool_names_raise():
    """Pool names key the result, so they must be unique."""
    with pytest.raises(ValueError, match=r"^pools\[2\]: duplicate pool name 'a'$"):
        retrieve_pools([], [Pool("a", 1, 1), Pool("b", 1, 1), Pool("a", 2, 2)], now=NOW)


@pytest.mark.parametrize("hook", ["scorer", "token_counter", "is_active"])
def test_non_callable_hook_raises(hook):
    """Each hook must be callable."""
    with pytest.raises(TypeError, match=rf"^{hook} must be callable, got int$"):
        retrieve([], Pool("p", 1, 1), now=NOW, **{hook: 3})


@pytest.mark.parametrize("bad", ["2026-01-01", date(2026, 1, 1), 0, 1.5])
def test_bad_now_raises(bad):
    """now must be a datetime."""
    with pytest.raises(TypeError, match=r"^now must be a datetime or None, got \w+$"):
        retrieve([{}], Pool("p", 1, 1), now=bad)


def test_naive_now_is_utc():
    """A naive now equals the aware UTC one."""
    store = [
        {"id": i, "created": f"2025-{m:02d}-01"} for i, m in enumerate(range(1, 13))
    ]
    naive = retrieve(store, Pool("p", 100, 5), now=datetime(2026, 1, 1))
    aware = retrieve(store, Pool("p", 100, 5), now=NOW)
    assert naive == aware


def test_now_none_uses_clock():
    """now=None works (reads the current time)."""
    got = retrieve([{"id": "a", "created": "2020-01-01"}], Pool("p", 10, 5))
    assert ids(got) == ["a"]


@pytest.mark.parametrize("scorer", [poolsplit.default_scorer, flat(1)])
@pytest.mark.parametrize("bad", ["msg", ["message"], 3])
def test_context_not_mapping_raises(scorer, bad):
    """context must be a Mapping or None, with any scorer."""
    with pytest.raises(
        TypeError, match=r"^context must be a Mapping or None, got \w+$"
    ):
        retrieve([{}], Pool("p", 1, 1), bad, scorer=scorer, now=NOW)


@pytest.mark.parametrize(
    ("bad", "kind"), [(3, "int"), (b"x", "bytes"), (["a"], "list")]
)
def test_context_message_non_str_raises(bad, kind):
    """context['message'] must be a str; the error names the type it got."""
    with pytest.raises(
        TypeError, match=rf"^context\['message'\] must be a str or None, got {kind}$"
    ):
        retrieve([{}], Pool("p", 1, 1), {"message": bad}, now=NOW)


def test_context_tags_bad_type_raises():
    """context['tags'] must be a str or a list."""
    with pytest.raises(
        TypeError, match=r"^context\['tags'\] must be a str or a list of str, got int$"
    ):
        retrieve([{}], Pool("p", 1, 1), {"tags": 3}, now=NOW)


def test_context_mapping_proxy_accepted():
    """Any Mapping works as context."""
    ctx = types.MappingProxyType({"message": "deploy kubernetes cluster"})
    store = [{"id": "a"}, {"id": "b", "content": "kubernetes cluster deploy"}]
    assert ids(retrieve(store, Pool("p", 100, 1), ctx, now=NOW)) == ["b"]


def test_entry_bad_base_priority_names_entry():
    """The default scorer's errors name the entry by position and id."""
    store = [{"id": "ok"}, {"id": "bad", "base_priority": "high"}]
    with pytest.raises(
        TypeError,
        match=r"^entries\[1\] \(id='bad'\): "
        r"base_priority must be a real number, got str 'high'$",
    ):
        retrieve(store, Pool("p", 10, 5), now=NOW)
    store[1]["base_priority"] = float("nan")
    with pytest.raises(
        ValueError,
        match=r"^entries\[1\] \(id='bad'\): base_priority must not be NaN, got nan$",
    ):
        retrieve(store, Pool("p", 10, 5), now=NOW)


def test_entry_bad_tags_names_entry():
    """tags of a wrong type name the entry."""
    with pytest.raises(
        TypeError,
        match=r"^entries\[0\] \(id='t'\): "
        r"tags must be a str or a list of str, got int$",
    ):
        retrieve([{"id": "t", "tags": 5}], Pool("p", 10, 5), now=NOW)


def test_entry_tag_that_cannot_become_text_names_entry():
    """A tag whose str() raises fails while scoring, and names the entry."""

    class Unprintable:
        def __str__(self):
            raise ValueError("no text")

    store = [{"id": "ok"}, {"id": "u", "tags": [Unprintable()]}]
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='u'\): no text$"):
        retrieve(store, Pool("p", 10, 5), {"message": "hello world"}, now=NOW)


def test_non_str_tag_matches_context_tag_by_its_text():
    """A tag 1 in a list counts as "1": the fast bound must not miss the match."""
    store = [
        {"id": "plain", "base_priority": 6, "tags": ["z"], "created": "2025-12-31"},
        {"id": "number", "base_priority": 5, "tags": [1], "created": "2025-12-31"},
    ]  # scores 6 and 7.5
    got = retrieve(store, Pool("p", 100, 1), {"tags": ["1"]}, now=NOW)
    assert [e["id"] for e in got] == ["number"]


# --- identity, generators, read-only ---------------------------------------


def test_generator_read_once():
    """A generator is consumed exactly once."""
    reads = []

    def gen():
        for i in range(3):
            reads.append(i)
            yield {"id": str(i)}

    result = retrieve_pools(gen(), [Pool("a", 1, 1), Pool("b", 100, 5)], now=NOW)
    assert reads == [0, 1, 2]
    assert ids(result["a"]) == ["0"]
    assert ids(result["b"]) == ["1", "2"]


def test_results_are_input_objects():
    """No copies: identity is preserved."""
    store = [{"id": "a", "scope": "always"}, {"id": "b"}]
    got = retrieve(store, Pool("p", 100, 5), now=NOW)
    assert got[0] is store[0]
    assert got[1] is store[1]


def test_read_only_mapping_entries():
    """MappingProxyType entries work and come back as themselves."""
    store = [
        types.MappingProxyType({"id": "a", "scope": "always"}),
        types.MappingProxyType({"id": "b", "token_count": 2}),
    ]
    got = retrieve(store, Pool("p", 2, 5), now=NOW)
    assert [g is s for g, s in zip(got, store)] == [True, True]


# --- errors propagate -----------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize("hook", ["scorer", "token_counter", "is_active"])
def test_user_errors_propagate_unchanged(hook):
    """The same exception object reaches the caller."""
    error = Boom("x")

    def raiser(*args, **kwargs):
        raise error

    with pytest.raises(Boom) as info:
        retrieve([{"id": "a"}], Pool("p", 10, 5), now=NOW, **{hook: raiser})
    assert info.value is error


@pytest.mark.parametrize("exc", [TypeError("own"), ValueError("own")])
def test_user_scorer_type_value_errors_propagate_unchanged(exc):
    """Even TypeError/ValueError from a custom scorer are not rewrapped."""

    def raiser(entry, context, *, now):
        raise exc

    with pytest.raises(type(exc)) as info:
        retrieve([{"id": "a"}], Pool("p", 10, 5), scorer=raiser, now=NOW)
    assert info.value is exc


def test_custom_is_active_truthiness():
    """is_active results are read for truth."""
    store = [{"id": "a", "live": 1}, {"id": "b", "live": 0}, {"id": "c", "live": []}]
    got = retrieve(store, Pool("p", 10, 5), is_active=lambda e: e["live"], now=NOW)
    assert ids(got) == ["a"]


# --- ordering -------------------------------------------------------------


def test_mixed_created_and_id_kinds_sort_without_error():
    """str, datetime, date, number, garbage and missing values all compare."""
    store = [
        {"id": "s", "created": "2025-06-01"},
        {"id": 3, "created": datetime(2025, 6, 1)},
        {"id": 2.5, "created": date(2025, 6, 1)},
        {"id": None, "created": 1_700_000_000},
        {"id": ("t",), "created": "garbage"},
        {"id": float("nan"), "created": ["list"]},
        {"id": True},
        {"created": float("inf")},
    ]
    got = retrieve(store, Pool("p", 100, 20), scorer=flat(1), now=NOW)
    assert len(got) == len(store)
    position = {id(e): i for i, e in enumerate(store)}
    order = [position[id(e)] for e in got]
    # missing created first, then the parsed instants, then unparseable values
    # (an infinite POSIX number has no instant)
    assert order[0] == 6
    assert set(order[1:5]) == {0, 1, 2, 3}
    assert set(order[5:]) == {4, 5, 7}
    again = retrieve(store, Pool("p", 100, 20), scorer=flat(1), now=NOW)
    assert [id(e) for e in again] == [id(e) for e in got]


def test_ties_break_by_created_then_id_then_index():
    """Equal scores order by created, then id, then input index."""
    store = [
        {"id": "b", "created": "2025-01-02"},
        {"id": "a", "created": "2025-01-02"},
        {"id": "z", "created": "2025-01-01"},
        {"id": "a", "created": "2025-01-02"},
        {"id": "q"},
    ]
    got = retrieve(store, Pool("p", 100, 10), scorer=flat(1), now=NOW)
    position = {id(e): i for i, e in enumerate(store)}
    assert [position[id(e)] for e in got] == [4, 2, 1, 3, 0]


def test_same_instant_different_offsets_tie_on_created():
    """+05:00 and Z forms of one instant, and a datetime of it, tie on created,
    so id decides ("a" before "b" although "b" is listed first); a later
    instant comes after both whatever its id."""
    store = [
        {"id": "c", "created": datetime(2025, 1, 1, tzinfo=timezone.utc)},
        {"id": "b", "created": "2025-01-01T05:00:00+05:00"},
        {"id": "a", "created": "2025-01-01T00:00:00Z"},
        {"id": "0", "created": "2025-01-01T00:00:01Z"},
    ]
    got = retrieve(store, Pool("p", 100, 4), now=NOW)
    assert ids(got) == ["a", "b", "c", "0"]


# --- retrieve_pools -------------------------------------------------------


def test_retrieve_pools_each_entry_once():
    """An entry taken by an earlier pool is not offered to later ones."""
    store = [{"id": "a", "scope": "always"}, {"id": "b"}, {"id": "c"}]
    result = retrieve_pools(store, [Pool("one", 100, 1), Pool("two", 100, 5)], now=NOW)
    assert list(result) == ["one", "two"]
    assert ids(result["one"]) == ["a", "b"]
    assert ids(result["two"]) == ["c"]


def test_equal_dicts_are_two_entries():
    """Dedupe is by identity, so equal dicts both load."""
    a = {"content": "same"}
    b = {"content": "same"}
    result = retrieve_pools([a, b], [Pool("one", 100, 1), Pool("two", 100, 1)], now=NOW)
    assert result["one"][0] is a
    assert result["two"][0] is b


def test_same_object_twice_in_input_lands_in_one_pool():
    """The same object listed twice must not land in two pools."""
    a = {"id": "a"}
    result = retrieve_pools([a, a], [Pool("one", 100, 1), Pool("two", 100, 5)], now=NOW)
    assert result == {"one": [a], "two": []}


def test_same_always_object_twice_loads_once():
    """An always-scope object listed twice is one entry: loaded once, first."""
    a = {"id": "a", "scope": "always"}
    b = {"id": "b"}
    result = retrieve_pools([a, b, a], [Pool("one", 100, 5)], now=NOW)
    assert result == {"one": [a, b]}


def test_scorer_called_at_most_once_per_entry():
    """Scores are shared across pools."""
    calls = []

    def scorer(entry, context, *, now):
        calls.append(entry["id"])
        return 1.0

    store = [{"id": str(i)} for i in range(5)]
    pools = [Pool("a", 1, 1), Pool("b", 1, 1), Pool("c", 0, 0)]
    result = retrieve_pools(store, pools, scorer=scorer, now=NOW)
    assert sorted(calls) == sorted(set(calls))
    assert ids(result["a"]) == ["0"]
    assert ids(result["b"]) == ["1"]


def test_empty_pools_and_entries():
    """No pools gives an empty dict; no entries gives empty lists."""
    assert retrieve_pools([{}], [], now=NOW) == {}
    assert retrieve_pools([], [Pool("a", 1, 1)], now=NOW) == {"a": []}


def test_retrieve_pools_always_only_no_context_candidates():
    """A pool with only always entries then a pool with context entries."""
    store = [{"id": "a", "scope": "always", "type": "x"}, {"id": "b", "type": "y"}]
    result = retrieve_pools(
        store, [Pool("x", 0, 0, types=["x"]), Pool("y", 10, 1, types=["y"])], now=NOW
    )
    assert ids(result["x"]) == ["a"]
    assert ids(result["y"]) == ["b"]


def test_clear_caches_keeps_results():
    """clear_caches frees memory and never changes a result."""
    store = [{"id": "a", "content": "alpha beta gamma", "created": "2025-12-01T00:00Z"}]
    ctx = {"message": "alpha beta"}
    before = poolsplit.default_scorer(store[0], ctx, now=NOW)
    clear_caches()
    assert poolsplit.default_scorer(store[0], ctx, now=NOW) == before


def test_trace_records_every_outcome():
    """The traced scan records always, selected, over-token and entry-cap steps."""
    store = [
        {"id": "al", "scope": "always"},
        {"id": "a", "token_count": 3, "base_priority": 9},
        {"id": "big", "token_count": 50, "base_priority": 8},
        {"id": "b", "token_count": 3, "base_priority": 7},
        {"id": "c", "token_count": 1, "base_priority": 6},
    ]
    report = explain(store, [Pool("p", 10, 2)], now=NOW)
    outcomes = [(store[s.index]["id"], s.outcome) for s in report.steps]
    assert outcomes == [
        ("al", "always"),
        ("a", "selected"),
        ("big", "over_tokens"),
        ("b", "selected"),
        ("c", "entry_cap"),
    ]
    assert ids(report.selected()["p"]) == ["al", "a", "b"]


# --- repeated objects, errors naming the entry ---------------------------------


class Count(int):
    pass


def test_repeated_object_is_counted_once_even_by_a_changing_counter():
    """A repeat is passed over before it is costed: a counter whose answer
    changes between calls cannot let the repeat in where its first position
    did not fit."""
    calls = []

    def counter(text):
        calls.append(text)
        return 100 if len(calls) == 1 else 1

    entry = {"id": "x", "content": "hello"}
    assert (
        retrieve([entry, entry], Pool("p", 10, 5), now=NOW, token_counter=counter) == []
    )
    assert calls == ["hello"]


def test_unicode_error_from_content_keeps_its_cause():
    """1: the label was added by rebuilding the exception with type(exc)(msg),
    which UnicodeDecodeError's five-argument constructor rejects."""
    failure = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    class Undecodable:
        def __str__(self):
            raise failure

    store = [{"id": "u", "content": Undecodable()}]
    with pytest.raises(ValueError) as caught:
        retrieve(store, Pool("p", 10, 1), {"message": "word"}, now=NOW)
    assert type(caught.value) is poolsplit.EntryValueError
    assert str(caught.value) == (
        "entries[0] (id='u'): 'utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte"
    )
    assert caught.value.__cause__ is failure


def test_scorer_returning_a_non_number_names_its_type():
    """The TypeError for a scorer's str result names str and the value."""
    with pytest.raises(TypeError, match=r"got str 'high' for entries\[0\]"):
        retrieve([{"id": "a"}], Pool("p", 100, 1), scorer=lambda e, c, now: "high")


def test_custom_scorer_scores_an_object_listed_twice_once():
    """_select 10: a custom scorer sees each object once, even listed twice."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(entry["id"])
        return 1.0

    entry = {"id": "a"}
    got = retrieve_pools(
        [entry, {"id": "b"}, entry], [Pool("p", 100, 5)], scorer=scorer, now=NOW
    )
    assert sorted(seen) == ["a", "b"]
    assert ids(got["p"]) == ["a", "b"]


def test_int_subclass_token_count_of_one_is_the_cost():
    """_token_count 15: a token_count of 1 (an int subclass) costs 1, not the
    counter's 100 for its content."""
    entry = {"id": "a", "content": "x" * 400, "token_count": Count(1)}
    assert ids(retrieve([entry], Pool("p", 1, 1), now=NOW)) == ["a"]


def test_a_custom_scorer_still_sees_the_entries_after_a_repeated_object():
    """A repeated object is passed over, and the scan goes on to the entries
    after it: [a, a, b] with a custom scorer takes b too."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(entry["id"])
        return {"a": 2.0, "b": 1.0, "c": 3.0}[entry["id"]]

    a = {"id": "a"}
    store = [a, a, {"id": "b"}, {"id": "c"}]
    got = retrieve_pools(store, [Pool("p", 100, 5)], scorer=scorer, now=NOW)
    assert ids(got["p"]) == ["c", "a", "b"]
    assert sorted(seen) == ["a", "b", "c"]
    assert ids(retrieve(store, Pool("p", 100, 5), scorer=scorer, now=NOW)) == [
        "c",
        "a",
        "b",
    ]
