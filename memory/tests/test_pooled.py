"""Every pool its own room: what a pool loads never depends on entries it
does not admit (issue 48), on the ranking engine, on both backends, and in
the flood scenario; and the per-pool ranking is the README's rule, checked
against test_ranking's oracle applied to each pool's own entries."""

from __future__ import annotations

import io
import json
import warnings
from datetime import datetime, timezone

import poolsplit
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from poolsplit import DEMO_NOW, Pool, demo_store
from test_ranking import VOCABULARY, oracle_factor, oracle_r

from poolsplit_memory import _index, _subset
from poolsplit_memory._pooled import Parts, lexical, owners, separate
from poolsplit_memory.store import pool_owners

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
TYPES = ["fact", "task", "skill", "note"]

text = st.lists(st.sampled_from(VOCABULARY), max_size=6).map(" ".join)
entries_of = st.lists(
    st.fixed_dictionaries(
        {"content": text, "type": st.sampled_from(TYPES)},
        optional={
            "scope": st.just("always"),
            "base_priority": st.integers(1, 9),
            "created": st.sampled_from(
                ["2026-05-30", "2026-01-01T10:00:00Z", "2024-02-02"]
            ),
        },
    ),
    max_size=14,
)


@st.composite
def disjoint_pools(draw):
    """Two to four pools admitting disjoint types (every type somewhere)."""
    kinds = draw(st.permutations(TYPES))
    cuts = sorted(draw(st.sets(st.integers(1, len(TYPES) - 1), max_size=3)))
    groups = [kinds[a:b] for a, b in zip([0, *cuts], [*cuts, len(TYPES)])]
    return [
        Pool(
            f"p{i}",
            draw(st.integers(5, 60)),
            draw(st.integers(1, 4)),
            tuple(group),
        )
        for i, group in enumerate(groups)
    ]


def recall(entries, pools, message, ranking="lexical"):
    """The engine's recall of ``entries`` (keys: their positions)."""
    parts = Parts(owners(pools), ranking)
    parts.enter(enumerate(entries))
    got = parts.recall(
        pools,
        {"message": message},
        now=NOW,
        token_counter=poolsplit.default_token_counter,
        relevance=None if ranking == "core" else lexical(message, NOW),
    )
    return {name: [e["id"] for e in chosen] for name, chosen in got.items()}


def pooled_core(entries, store_pools, pools, context, now):
    """``retrieve_pools`` of every entry, each entry scored by, and each pool
    floored by, the lexical relevance of its owner's entries (the first of
    the store's pools, ``store_pools``, None: the defaults, admitting its
    type), counted anew: what a store's recall must give (_pooled.py)."""
    parts = Parts(pool_owners(store_pools), "lexical")
    parts.enter(enumerate(entries))
    relevances = parts.relevances(lexical(context["message"], now))
    return poolsplit.retrieve_pools(
        entries,
        parts.floored(pools, relevances),
        context,
        scorer=parts.scorer(context, relevances),
        now=now,
    )


def ided(entries, prefix):
    return [dict(e, id=f"{prefix}{i}") for i, e in enumerate(entries)]


@given(
    entries=entries_of,
    others=entries_of,
    pools=disjoint_pools(),
    message=text,
    which=st.integers(0, 3),
    drop=st.integers(0, 5),
)
def test_property_a_pool_never_depends_on_entries_it_does_not_admit(
    entries, others, pools, message, which, drop
):
    """Adding, removing or changing entries of the types a pool does not
    admit never changes what that pool loads."""
    pool = pools[which % len(pools)]
    base = ided(entries, "e")
    before = recall(base, pools, message)[pool.name]
    foreign = [e for e in ided(others, "x") if e["type"] not in pool.types]
    kept_foreign = [e for e in base if e["type"] not in pool.types][drop:]
    own = [e for e in base if e["type"] in pool.types]
    changed = [dict(e, content=e["content"] + " marathon") for e in kept_foreign]
    for store in (own + foreign + changed, foreign + own, own):
        assert recall(store, pools, message)[pool.name] == before


@given(entries=entries_of, pools=disjoint_pools(), message=text)
def test_property_each_pool_is_the_readme_rule_over_its_own_entries(
    entries, pools, message
):
    """Each pool: the core's retrieve_pools of that pool alone over the
    entries it admits, scored by test_ranking's oracle over those entries
    only (its own idf, its own best, its own floor)."""
    entries = ided(entries, "e")
    got = recall(entries, pools, message)
    for pool in pools:
        own = [e for e in entries if e["type"] in pool.types]
        best = max((oracle_r(own, e, message) for e in own), default=0.0)

        def score(entry, _context, /, *, now, own=own, best=best):
            base = poolsplit.default_scorer(entry, {}, now=now)
            factor = oracle_factor(oracle_r(own, entry, message), best)
            return base * factor if factor else 0.0

        floor = 5e-324 if best > 0 else None
        expected = poolsplit.retrieve_pools(
            own,
            [Pool(pool.name, pool.max_tokens, pool.max_entries, pool.types, floor)],
            {"message": message},
            scorer=score,
            now=NOW,
        )[pool.name]
        want = [e["id"] for e in expected]
        # equal scores may tie in another order only by float rounding of
        # two formulas: compare the scores along the lists
        scores = {e["id"]: score(e, None, now=NOW) for e in own}
        assert [scores[i] for i in got[pool.name]] == pytest.approx(
            [scores[i] for i in want], rel=1e-9
        )


def test_a_word_in_one_pool_does_not_set_another_pools_floor():
    """The persona case: "work" matches a fact strongly; the tasks, which
    share nothing with the message, load as for a vague message."""
    entries = [
        {"id": "f", "type": "fact", "content": "The user works at Acme"},
        {"id": "t1", "type": "task", "content": "Renew the car insurance",
         "created": "2026-05-30"},
        {"id": "t2", "type": "task", "content": "Draft the quarterly budget",
         "created": "2026-05-20"},
    ]  # fmt: skip
    pools = [Pool("facts", 100, 2, ("fact",)), Pool("tasks", 100, 4, ("task",))]
    got = recall(entries, pools, "what should I work on next?")
    assert got == {"facts": ["f"], "tasks": ["t1", "t2"]}


def test_pools_sharing_a_type_take_what_the_earlier_left():
    """A pool admitting a type an earlier pool admits takes what that pool
    leaves (the core's rule), each entry scored in its owner's part."""
    entries = [
        {"id": f"t{i}", "type": "task", "content": f"billing step {i}",
         "created": f"2026-05-{10 + i}"}
        for i in range(4)
    ]  # fmt: skip
    pools = [Pool("first", 1000, 1, ("task",)), Pool("rest", 1000, 2)]
    assert not separate(pools)
    got = recall(entries, pools, "billing")
    assert got == {"first": ["t3"], "rest": ["t2", "t1"]}


# --- the store: both backends ---------------------------------------------------


def _import(store, entries):
    store.import_jsonl(io.StringIO("".join(json.dumps(e) + "\n" for e in entries)))


@settings(max_examples=6)
@given(entries=entries_of, others=entries_of, message=text)
def test_property_the_stores_pools_are_independent(open_, entries, others, message):
    """On SQLite and PostgreSQL, with the default pools: writing entries of
    other types (they land in other pools) never changes the facts pool."""
    open_.close_all()
    store = open_(f"n{abs(hash((str(entries), str(others), message))) % 10**9}")
    own = [dict(e, type="fact") for e in ided(entries, "f")]
    _import(store, own)
    before = [e["id"] for e in store.recall(message, now=NOW).pools["facts"]]
    _import(store, [dict(e, type="task") for e in ided(others, "t")])
    _import(store, [dict(e, type="growth") for e in ided(others, "g")])
    after = [e["id"] for e in store.recall(message, now=NOW).pools["facts"]]
    assert after == before
    for e in ided(others, "t"):
        store.forget(e["id"])
    assert [e["id"] for e in store.recall(message, now=NOW).pools["facts"]] == before


@pytest.mark.parametrize("ranking", ["lexical", "semantic"])
def test_the_flood_scenario_loads_every_types_best(open_, ranking):
    """Six types, the corrections, 200 urgent tasks, a question about the
    billing export: every pool loads its type's best entry (before the
    per-pool floor, facts, skills, growth and episodes came back empty)."""
    store = open_("ada", ranking=ranking)
    entries = [
        dict(e, created=datetime.fromtimestamp(e["created"], timezone.utc).isoformat())
        for e in demo_store(flood=200)
    ]
    _import(store, entries)
    if ranking == "semantic":
        store.reindex()
    got = store.recall("How is the billing export going?", now=DEMO_NOW).pools
    kinds = {e["type"] for e in entries}
    for pool in store_pools(kinds):
        assert got[pool], f"{ranking}: pool {pool} is empty"
    # the corrections, always-scope, all load
    assert {e["id"] for e in got["corrections"]} == {
        e["id"] for e in entries if e["type"] == "correction"
    }


def store_pools(kinds):
    from poolsplit_memory import default_pools

    return [p.name for p in default_pools(kinds) if not set(p.types).isdisjoint(kinds)]


def test_a_pool_whose_type_nothing_matches_loads_as_for_a_vague_message():
    """The floor is the pool's own: a message matching only facts leaves the
    tasks pool ranked by its base (freshest first among equals)."""
    entries = [
        {"id": "f1", "type": "fact", "content": "invoices are partitioned",
         "created": "2026-05-01"},
        {"id": "f2", "type": "fact", "content": "the dog is called Biscuit",
         "created": "2026-05-31"},
        {"id": "t1", "type": "task", "content": "call the plumber",
         "created": "2026-05-20"},
        {"id": "t2", "type": "task", "content": "renew the insurance",
         "created": "2026-05-30"},
    ]  # fmt: skip
    pools = [Pool("facts", 100, 4, ("fact",)), Pool("tasks", 100, 4, ("task",))]
    got = recall(entries, pools, "how are invoices stored?")
    assert got == {"facts": ["f1"], "tasks": ["t2", "t1"]}


@st.composite
def overlapping_pools(draw):
    """Pools that may admit a type an earlier one admits, or every type."""
    count = draw(st.integers(1, 4))
    pools = []
    for i in range(count):
        types = draw(
            st.one_of(
                st.none(),
                st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
            )
        )
        pools.append(
            Pool(
                f"p{i}",
                draw(st.integers(5, 60)),
                draw(st.integers(1, 4)),
                None if types is None else tuple(types),
            )
        )
    return pools


@given(entries=entries_of, pools=overlapping_pools(), message=text)
def test_property_pools_sharing_types_score_each_entry_by_its_owner(
    entries, pools, message
):
    """Whatever the pools, the recall is the core's retrieve_pools of every
    entry with each entry scored, and each pool floored, by its owner
    part's relevance (the fast loop and subset engine for pools sharing a
    type, the part walks for separate ones)."""
    entries = ided(entries, "e")
    parts = Parts(owners(pools), "lexical")
    parts.enter(enumerate(entries))
    saved = _subset._MAX_SHARE, _index._GROUP_SHARE
    # the subset's rounds and the indexes' walks on small stores too
    _subset._MAX_SHARE, _index._GROUP_SHARE = 1, 0
    try:
        with warnings.catch_warnings():  # an always-scope entry no pool admits
            warnings.simplefilter("ignore", poolsplit.PoolsplitWarning)
            expected = pooled_core(entries, pools, pools, {"message": message}, NOW)
            want = {name: [e["id"] for e in got] for name, got in expected.items()}
            for _ in range(3):  # every entry scored; the indexes built; used
                got = parts.recall(
                    pools,
                    {"message": message},
                    now=NOW,
                    token_counter=poolsplit.default_token_counter,
                    relevance=lexical(message, NOW),
                )
                assert {n: [e["id"] for e in c] for n, c in got.items()} == want
    finally:
        _subset._MAX_SHARE, _index._GROUP_SHARE = saved


def test_a_spill_over_pool_after_typed_ones_reads_a_subset():
    """The core README's idiom, typed pools then one of every type: the core
    is given a subset of the entries, not all 2,000 (it was every entry,
    about 200 times slower than the index at 10,000)."""
    entries = [
        {"id": f"e{i}", "type": TYPES[i % 4], "content": f"{VOCABULARY[i % 20]} {i}",
         "created": f"2026-05-{1 + i % 28:02d}"}
        for i in range(2000)
    ]  # fmt: skip
    pools = [Pool("facts", 200, 3, ("fact",)), Pool("rest", 300, 3)]
    seen = []
    core = poolsplit.retrieve_pools

    def counting(given, *args, **kwargs):
        given = list(given)
        seen.append(len(given))
        return core(given, *args, **kwargs)

    import poolsplit_memory._ranking as ranking

    original = ranking.poolsplit.retrieve_pools
    ranking.poolsplit.retrieve_pools = counting
    try:
        got = recall(entries, pools, "marathon running")
    finally:
        ranking.poolsplit.retrieve_pools = original
    assert got == {
        name: [e["id"] for e in chosen]
        for name, chosen in pooled_core(
            entries, pools, pools, {"message": "marathon running"}, NOW
        ).items()
    }
    assert seen and max(seen) < len(entries) // 4
