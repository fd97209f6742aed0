"""Property tests over generated stores and pools."""

import copy
import random
from datetime import date, datetime, timedelta, timezone
from unittest import mock

from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st
from oracle import oracle_cost, oracle_retrieve_pools

from poolsplit import (
    Pool,
    default_is_active,
    default_scorer,
    retrieve,
    retrieve_pools,
)

TYPES = ["note", "skill", "task", "correction"]

token_counts = st.one_of(
    st.integers(-3, 40),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.none(),
)
createds = st.one_of(
    st.none(),
    st.dates(date(2024, 1, 1), date(2026, 6, 1)),
    st.datetimes(datetime(2024, 1, 1), datetime(2026, 6, 1)),
    st.datetimes(
        datetime(2024, 1, 1), datetime(2026, 6, 1), timezones=st.just(timezone.utc)
    ),
    st.dates(date(2024, 1, 1), date(2026, 6, 1)).map(lambda d: d.isoformat() + "Z"),
    st.datetimes(datetime(2024, 1, 1), datetime(2026, 6, 1)).map(
        lambda d: d.isoformat() + "+05:00"
    ),
    st.integers(1_700_000_000, 1_780_000_000),
    st.sampled_from(["garbage", "2025-02-30", ""]),
)
ids_ = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 3))

entry_fields = {
    "id": ids_,
    "type": st.sampled_from(TYPES),
    "scope": st.sampled_from(["always", "context", None]),
    "status": st.sampled_from(["active", "archived", None]),
    "superseded_by": st.sampled_from([None, "", "x"]),
    "token_count": token_counts,
    "created": createds,
    "content": st.one_of(
        st.none(),
        st.integers(),
        st.lists(
            st.sampled_from(["deploy", "cluster", "the", "alpha", "beta", "x"]),
            max_size=8,
        ).map(" ".join),
    ),
    "base_priority": st.one_of(
        st.integers(0, 10),
        st.floats(0, 10),
        st.integers(-3, 3),
        st.floats(-10, 10),
        st.sampled_from([2**53, 2**53 + 1, -(2**60), 10**400]),
    ),
    "tags": st.one_of(
        st.sampled_from(["a", "b"]),
        st.lists(st.sampled_from("abc")),
        # str() of a non-str tag may match a context tag: 1 matches "1".
        st.lists(st.one_of(st.sampled_from("ab1"), st.integers(0, 2))),
        st.lists(st.sampled_from("abc")).map(tuple),
    ),
    "project": st.sampled_from([None, "p", "q"]),
}


@st.composite
def entries(draw):
    keys = draw(st.sets(st.sampled_from(sorted(entry_fields))))
    return {key: draw(entry_fields[key]) for key in sorted(keys)}


stores = st.lists(entries(), max_size=25)
pools_ = st.builds(
    Pool,
    name=st.just("p"),
    max_tokens=st.integers(0, 60),
    max_entries=st.integers(0, 8),
    types=st.one_of(
        st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)
    ),
)
pool_lists = st.lists(pools_, min_size=1, max_size=4).map(
    lambda ps: [
        Pool(f"p{i}", p.max_tokens, p.max_entries, p.types) for i, p in enumerate(ps)
    ]
)
contexts = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "message": st.sampled_from(["", "deploy cluster", "alpha beta gamma"]),
            "tags": st.lists(st.sampled_from("abc1")),
            "project": st.sampled_from([None, "p", "q"]),
        },
    ),
)


def accepts(pool, entry):
    kind = entry.get("type") or "note"
    return pool.types is None or kind in pool.types


def check_invariants(store, pools, result, snapshot):
    """Budgets, caps, always presence, identity, disjointness, no mutation."""
    assert list(result) == [p.name for p in pools]
    inputs = {id(e) for e in store}
    seen = set()
    for pool in pools:
        got = result[pool.name]
        for entry in got:
            assert id(entry) in inputs  # the input objects themselves
            assert id(entry) not in seen  # each entry in at most one pool
            seen.add(id(entry))
            assert default_is_active(entry)
            assert accepts(pool, entry)
        context = [e for e in got if e.get("scope") != "always"]
        always = [e for e in got if e.get("scope") == "always"]
        assert got[: len(always)] == always  # always entries first
        assert sum(oracle_cost(e) for e in context) <= pool.max_tokens
        assert len(context) <= pool.max_entries
    # every active always entry accepted by some pool is in the first such pool
    for entry in store:
        if entry.get("scope") == "always" and default_is_active(entry):
            first = next((p for p in pools if accepts(p, entry)), None)
            if first is not None:
                assert any(e is entry for e in result[first.name])
    assert store == snapshot  # nothing modified


@given(stores, pool_lists, contexts)
def test_invariants_hold(store, pools, context):
    """(b)(d) budgets, caps and identity hold; nothing is mutated."""
    snapshot = copy.deepcopy(store)
    result = retrieve_pools(store, pools, context, now=NOW)
    check_invariants(store, pools, result, snapshot)


@given(stores, pools_, st.integers(0, 30))
def test_always_survive_flood(store, pool, flood):
    """(a) always entries load under any budget and any flood of fresh entries."""
    fresh = [
        {"id": f"f{i}", "base_priority": 1e9, "created": NOW, "token_count": 1}
        for i in range(flood)
    ]
    full = fresh + store
    snapshot = copy.deepcopy(full)
    for budget in (pool, Pool("z", 0, 0, pool.types)):
        got = retrieve(full, budget, now=NOW)
        check_invariants(full, [budget], {budget.name: got}, snapshot)
        expected = [
            e
            for e in store
            if e.get("scope") == "always"
            and default_is_active(e)
            and accepts(budget, e)
        ]
        assert [id(e) for e in got[: len(expected)]] == [id(e) for e in expected]


@given(stores, pool_lists, contexts, st.randoms(use_true_random=False))
def test_shuffle_invariance_with_distinct_ids(store, pools, context, rnd):
    """(c) with distinct ids the result ignores input order; repeats are identical."""
    for i, entry in enumerate(store):
        entry["id"] = f"id{i:03d}"
    snapshot = copy.deepcopy(store)
    first = retrieve_pools(store, pools, context, now=NOW)
    check_invariants(store, pools, first, snapshot)
    again = retrieve_pools(store, pools, context, now=NOW)
    assert {k: [id(e) for e in v] for k, v in first.items()} == {
        k: [id(e) for e in v] for k, v in again.items()
    }
    shuffled = list(store)
    rnd.shuffle(shuffled)
    other = retrieve_pools(shuffled, pools, context, now=NOW)
    check_invariants(shuffled, pools, other, copy.deepcopy(shuffled))
    assert store == snapshot
    for name in first:
        context_first = [id(e) for e in first[name] if e.get("scope") != "always"]
        context_other = [id(e) for e in other[name] if e.get("scope") != "always"]
        assert context_first == context_other
        assert {id(e) for e in first[name]} == {id(e) for e in other[name]}


@given(stores, pool_lists, contexts)
def test_pools_equal_sequential_retrieve(store, pools, context):
    """(e) retrieve_pools equals pool-by-pool retrieve on what earlier pools left."""
    snapshot = copy.deepcopy(store)
    result = retrieve_pools(store, pools, context, now=NOW)
    check_invariants(store, pools, result, snapshot)
    left = list(store)
    for pool in pools:
        got = retrieve(left, pool, context, now=NOW)
        assert [id(e) for e in got] == [id(e) for e in result[pool.name]]
        taken = {id(e) for e in got}
        left = [e for e in left if id(e) not in taken]


@given(stores, pool_lists, contexts)
def test_agrees_with_oracle(store, pools, context):
    """(f) the greedy fill agrees with the naive oracle."""
    snapshot = copy.deepcopy(store)
    result = retrieve_pools(store, pools, context, now=NOW)
    check_invariants(store, pools, result, snapshot)
    expected = oracle_retrieve_pools(store, pools, context, now=NOW)
    assert {k: [id(e) for e in v] for k, v in result.items()} == {
        k: [id(e) for e in v] for k, v in expected.items()
    }


@given(stores, pool_lists, contexts, st.lists(st.integers(0, 24), max_size=10))
def test_repeated_objects_agree_with_oracle(store, pools, context, picks):
    """An object listed twice is one entry, at its first position."""
    repeated = store + [store[i % len(store)] for i in picks] if store else []
    random.Random(len(picks)).shuffle(repeated)
    expected = oracle_retrieve_pools(repeated, pools, context, now=NOW)
    got = retrieve_pools(repeated, pools, context, now=NOW)
    assert {k: [id(e) for e in v] for k, v in got.items()} == {
        k: [id(e) for e in v] for k, v in expected.items()
    }


@given(stores, pool_lists, contexts, st.integers(1, 4))
def test_sorting_only_the_best_first_agrees_with_oracle(store, pools, context, step):
    """With the sort cut at a sample's best eighth even for tiny stores, walks
    that reach the entries below the cutoff still agree with the oracle."""
    import poolsplit

    with (
        mock.patch.object(poolsplit, "_SORT_ALL_BELOW", 0),
        mock.patch.object(poolsplit, "_SAMPLE_STEP", step),
    ):
        got = retrieve_pools(store, pools, context, now=NOW)
    expected = oracle_retrieve_pools(store, pools, context, now=NOW)
    assert {k: [id(e) for e in v] for k, v in got.items()} == {
        k: [id(e) for e in v] for k, v in expected.items()
    }


@given(stores, pool_lists, st.integers(0, 2**32 - 1))
def test_agrees_with_oracle_custom_hooks(store, pools, seed):
    """(f) with a random custom scorer and counter, still the oracle's answer."""
    rng = random.Random(seed)
    table = {}

    def scorer(entry, context, *, now):
        return table.setdefault(id(entry), rng.choice([0, 1, 2, 2.5, float("inf")]))

    def counter(text):
        return len(text) % 7 - 2

    snapshot = copy.deepcopy(store)
    kwargs = {"scorer": scorer, "token_counter": counter, "now": NOW}
    result = retrieve_pools(store, pools, **kwargs)
    assert store == snapshot
    expected = oracle_retrieve_pools(store, pools, **kwargs)
    assert {k: [id(e) for e in v] for k, v in result.items()} == {
        k: [id(e) for e in v] for k, v in expected.items()
    }


def test_flood_regression_zero_budget():
    """Named regression: a 0/0 pool under 100 fresh entries keeps its correction."""
    correction = {"id": "c", "type": "correction", "scope": "always"}
    fresh = [
        {"id": str(i), "type": "correction", "base_priority": 99, "created": NOW}
        for i in range(100)
    ]
    store = [*fresh, correction]
    pool = Pool("core", 0, 0, types=["correction"])
    got = retrieve(store, pool, now=NOW - timedelta(days=1))
    assert got == [correction]
    assert got[0] is correction


@given(stores, pool_lists, contexts)
def test_trace_mode_selects_the_same(store, pools, context):
    """The traced scan (used by explain) selects exactly what retrieve_pools does."""
    import poolsplit

    snapshot = copy.deepcopy(store)
    plain = retrieve_pools(store, pools, context, now=NOW)
    traced = poolsplit._select(
        store,
        pools,
        context,
        poolsplit.default_scorer,
        poolsplit.default_token_counter,
        default_is_active,
        NOW,
        trace=True,
    )
    check_invariants(store, pools, traced.results, snapshot)
    assert {k: [id(e) for e in v] for k, v in traced.results.items()} == {
        k: [id(e) for e in v] for k, v in plain.items()
    }
    taken = [s for s in traced.steps if s.outcome in ("always", "selected")]
    assert len(taken) == sum(len(v) for v in plain.values())


@given(stores, contexts)
def test_base_scores_finish_to_the_score(store, context):
    """The base scores inlined in _scan equal _base_score's, bound the score when
    multiplied by the largest message factor, and finish to it exactly."""
    import poolsplit

    query = poolsplit._query(context, NOW)
    scan = poolsplit._scan(store, [Pool("all", 1, 1)], default_is_active, query, False)
    ranked = [store[i] for i in scan.ranked]
    base = scan.base_scores
    assert base == [poolsplit._base_score(e, query) for e in ranked]
    factor = poolsplit._MAX_MESSAGE_FACTOR if query.words else 1.0
    for entry, partial in zip(ranked, base):
        score = default_scorer(entry, context, now=NOW)
        assert poolsplit._message_score(partial, entry, query) == score
        assert (partial * factor if partial > 0 else partial) >= score


def test_base_scores_at_the_recency_floor_boundary():
    """Ages around the day recency reaches its floor score the same inlined."""
    import poolsplit

    query = poolsplit._query({"tags": ["a"]}, NOW)
    ages = [0, 0.5, 89, 89.999, 90, 90.0001, 90.5, 91, 91.0001, 365]
    store = [
        {"base_priority": 7, "created": (NOW - timedelta(days=age)).isoformat()}
        for age in ages
    ]
    scan = poolsplit._scan(store, [Pool("all", 1, 1)], default_is_active, query, False)
    base = scan.base_scores
    assert scan.ranked == list(range(len(store)))
    assert base == [poolsplit._base_score(e, query) for e in store]
    assert base[-1] == 7 * poolsplit.RECENCY_FLOOR


def test_entry_below_the_sort_cutoff_can_still_win():
    """An entry left below the cutoff whose message match beats the sorted
    head is found: the walk sorts the rest when the head's best may lose."""
    import poolsplit

    store = [
        {"id": f"e{i}", "base_priority": 6 if i < 2 else 5, "content": "unrelated"}
        for i in range(8)
    ]
    store[7]["content"] = "deploy the cluster"  # score 5 * 2.5 beats 6
    with (
        mock.patch.object(poolsplit, "_SORT_ALL_BELOW", 0),
        mock.patch.object(poolsplit, "_SAMPLE_STEP", 1),
    ):
        got = retrieve(store, Pool("p", 100, 1), {"message": "deploy cluster"})
    assert [e["id"] for e in got] == ["e7"]
