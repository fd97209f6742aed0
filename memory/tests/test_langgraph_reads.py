"""Another BaseStore's namespace, read whole every turn and compared with the
last read: the entries are checked and split by pool again only when the
values read changed (``repr`` of them), so every write of any process is
still seen, and an unchanged namespace costs a read instead of a build."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import poolsplit
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from poolsplit import Pool

from poolsplit_memory import langgraph as lg
from poolsplit_memory.langgraph import load_entries

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
SPACE = ("memories", "ada")
KEYS = ("k1", "k2", "k3")
POOLS = [
    Pool("rules", max_tokens=60, max_entries=2, types=("correction",)),
    Pool("rest", max_tokens=40, max_entries=2),
]


def options(pools=None, ranking="lexical"):
    return lg._options(pools, SPACE, ranking, NOW)


def outcome(got):
    """What a turn shows of a fill: the ids per pool, and what was read."""
    pools, read = got
    ids = {name: [e["id"] for e in entries] for name, entries in pools.items()}
    return ids, read.skipped, read.warnings, read.notice, [p.name for p in read.pools]


def kept(store, space, chosen):
    """The turn's fill through the kept reads (what the adapters call)."""
    return outcome(lg._fill(store, space, chosen)(MESSAGE))


def built_now(store, space, chosen):
    """What a turn gave before reads were kept: this read, built anew."""
    fresh = lg._build(load_entries(store, space), chosen)
    return outcome(lg._ranked(fresh, chosen)(MESSAGE))


MESSAGE = "how do we deploy the billing service?"

VALUES = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b", "c"]),  # two keys may hold one id
        "content": st.sampled_from(
            ["deploy the billing service", "the dog is Biscuit", "billing", ""]
        ),
    },
    optional={
        "type": st.sampled_from(["fact", "correction", "task", 1]),
        "base_priority": st.sampled_from([1, 1.0, True, 5, -1, "high"]),
        "scope": st.sampled_from(["always", "global"]),
        "status": st.sampled_from(["active", "done"]),
        "created": st.sampled_from(
            ["2026-11-30T00:00:00+00:00", "2026-11-30T00:00:00Z", "soon"]
        ),
    },
)
# In place: a value of the store changed without put (InMemoryStore hands out
# the dict it holds), to a value equal by == but not the same (1, 1.0, True).
CHANGES = st.tuples(
    st.sampled_from(["base_priority", "content", "type", "scope"]),
    st.sampled_from([1, 1.0, True, "billing", "always", None]),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from(KEYS), VALUES),
        st.tuples(st.just("delete"), st.sampled_from(KEYS)),
        st.tuples(st.just("in place"), st.sampled_from(KEYS), CHANGES),
        st.tuples(st.just("put again"), st.sampled_from(KEYS)),  # equal value
        st.tuples(
            st.just("read"),
        ),
    ),
    max_size=12,
)


def apply(store, op):
    kind, *args = op
    if kind == "put":
        store.put(SPACE, args[0], dict(args[1]))
    elif kind == "delete":
        store.delete(SPACE, args[0])
    elif kind in ("in place", "put again"):
        item = store.get(SPACE, args[0])
        if item is None:
            return
        if kind == "put again":
            store.put(SPACE, args[0], dict(item.value))
        else:
            field, value = args[1]
            item.value[field] = value


@given(
    ops=OPS,
    pools=st.sampled_from([None, POOLS]),
    ranking=st.sampled_from(["lexical", "core"]),
)
# (a change in place, to a value the rule refuses; a change == cannot see)
@example(
    ops=[
        ("put", "k1", {"id": "a", "content": "billing"}),
        ("in place", "k1", ("content", 1)),
    ],
    pools=None,
    ranking="lexical",
)
@example(
    ops=[
        ("put", "k1", {"id": "a", "content": "billing", "base_priority": 1}),
        ("in place", "k1", ("base_priority", True)),
    ],
    pools=POOLS,
    ranking="core",
)
def test_a_kept_read_gives_what_a_new_build_of_the_same_read_gives(ops, pools, ranking):
    """After every write, delete, change in place (to 1, 1.0 or True, which
    == cannot tell apart) or none, the turn's pools, skips, warnings and
    notice are those of the read built anew."""
    store = InMemoryStore()
    chosen = options(pools, ranking)
    for op in ops:
        apply(store, op)
        assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen), op
        if ranking == "core":  # the core itself, over what the read loads
            got, read = lg._fill(store, SPACE, chosen)(MESSAGE)
            expected = poolsplit.retrieve_pools(
                read.entries, read.pools, {"message": MESSAGE}, now=NOW
            )
            assert {n: [e["id"] for e in got[n]] for n in got} == {
                n: [e["id"] for e in expected[n]] for n in expected
            }


def test_an_unchanged_namespace_is_built_once_and_a_change_builds_again():
    store = InMemoryStore()
    chosen = options()
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "deploy billing"})
    first = lg._read(store, SPACE, chosen)
    assert lg._read(store, SPACE, chosen) is first
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "deploy billing"})
    assert lg._read(store, SPACE, chosen) is first  # an equal value put again
    store.get(SPACE, "k1").value["base_priority"] = True  # in place
    second = lg._read(store, SPACE, chosen)
    assert second is not first
    assert second.read.skipped and second.read.skipped[0]["id"] == "a"
    store.get(SPACE, "k1").value["base_priority"] = 1  # == True, not the same
    third = lg._read(store, SPACE, chosen)
    assert third is not second and not third.read.skipped
    # other pools or another ranking: a build of their own
    assert lg._read(store, SPACE, options(POOLS)) is not third
    assert lg._read(store, SPACE, options(ranking="core")) is not third
    assert lg._read(store, SPACE, chosen) is third


def test_a_store_keeps_its_last_reads_while_they_hold_KEPT_VALUES(monkeypatch):
    """The least recently used builds go while the kept reads held more than
    KEPT_VALUES values (counted one more each, so that empty ones count);
    the newest is kept whatever its size; each (namespace, ranking, pools)
    is a build of its own."""
    monkeypatch.setattr(lg, "KEPT_VALUES", 8)
    store = InMemoryStore()
    chosen = options()
    spaces = [("memories", f"u{n}") for n in range(4)]
    for space, count in zip(spaces, (2, 2, 1, 6)):
        for n in range(count):
            store.put(space, f"k{n}", {"id": f"a{n}", "content": f"note {n}"})
    first = [lg._read(store, space, chosen) for space in spaces[:3]]  # 3+3+2
    assert [lg._read(store, space, chosen) for space in spaces[:3]] == first
    core = lg._read(store, spaces[2], options(ranking="core"))  # 10: u0 goes
    assert core is not first[2]
    assert lg._read(store, spaces[1], chosen) is first[1]
    again = lg._read(store, spaces[0], chosen)
    assert again is not first[0]  # built again
    big = lg._read(store, spaces[3], chosen)  # 7 on its own: only it stays
    assert lg._read(store, spaces[3], chosen) is big
    assert lg._read(store, spaces[0], chosen) is not again


def test_values_that_do_not_load_count_toward_KEPT_VALUES(monkeypatch):
    """A read's values count whether they load or not (done, skipped)."""
    monkeypatch.setattr(lg, "KEPT_VALUES", 4)
    store = InMemoryStore()
    chosen = options()
    for n in range(3):
        store.put(
            ("m", "done"), f"k{n}", {"id": f"d{n}", "content": "x", "status": "done"}
        )
    store.put(("m", "one"), "k", {"id": "a", "content": "note"})
    done = lg._read(store, ("m", "done"), chosen)  # 4
    assert not done.read.entries
    lg._read(store, ("m", "one"), chosen)  # 2 more: the done one goes
    assert lg._read(store, ("m", "done"), chosen) is not done


def test_a_store_keeps_at_most_KEPT_READS_builds(monkeypatch):
    """Empty namespaces (users with no memory yet) count too."""
    monkeypatch.setattr(lg, "KEPT_READS", 2)
    store = InMemoryStore()
    chosen = options()
    spaces = [("memories", f"u{n}") for n in range(3)]
    first = [lg._read(store, space, chosen) for space in spaces]
    assert lg._read(store, spaces[2], chosen) is first[2]
    assert lg._read(store, spaces[1], chosen) is first[1]
    assert lg._read(store, spaces[0], chosen) is not first[0]


class Masked(str):
    def __repr__(self):
        return "'***'"


@pytest.mark.parametrize(
    "odd",
    [(1, 2), {1: "x"}, Masked("billing"), True],
    ids=["tuple", "int key", "str subclass", "bool"],
)
def test_only_a_read_of_jsons_exact_types_is_kept(odd):
    """A tuple, a key that is not a str, a subclass (whose repr may hide its
    value) make the read one that is built every turn; a bool is JSON's."""
    store = InMemoryStore()
    chosen = options()
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "billing", "x": odd})
    first = lg._read(store, SPACE, chosen)
    assert (lg._read(store, SPACE, chosen) is first) == (odd is True)


def test_a_kept_build_is_of_its_own_copy_of_the_read():
    """A value the store no longer holds (an equal one was put in its place),
    changed in place, changes no later turn: the build is of a copy."""
    store = InMemoryStore()
    chosen = options()
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "deploy the billing"})
    old = store.get(SPACE, "k1").value
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    store.put(SPACE, "k1", dict(old))
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    old["content"] = "the dog is Biscuit"
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    ids, *_ = kept(store, SPACE, chosen)
    assert ids["facts"] == ["a"]


class Unhashable(InMemoryStore):
    __hash__ = None  # type: ignore[assignment]  # no store-keyed state


def test_a_store_that_cannot_be_keyed_is_built_every_turn_and_still_right():
    store = Unhashable()
    chosen = options()
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "deploy billing"})
    assert lg._read(store, SPACE, chosen) is not lg._read(store, SPACE, chosen)
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)


def test_a_write_through_another_postgres_store_is_seen_then_kept(pg_url):
    """LangGraph's PostgresStore hands out new dicts on every read: an
    unchanged namespace is still built once; another instance's put (another
    process's) is seen at the next turn."""
    from langgraph.store.postgres import PostgresStore

    entry = {"id": "a", "type": "fact", "content": "deploy the billing service"}
    with (
        PostgresStore.from_conn_string(pg_url) as mine,
        PostgresStore.from_conn_string(pg_url) as theirs,
    ):
        mine.setup()
        mine.put(SPACE, "k1", entry)
        chosen = options()
        first = lg._read(mine, SPACE, chosen)
        assert lg._read(mine, SPACE, chosen) is first
        theirs.put(SPACE, "k2", {**entry, "id": "b", "content": "billing broke"})
        second = lg._read(mine, SPACE, chosen)
        assert second is not first
        assert sorted(e["id"] for e in second.read.entries) == ["a", "b"]
        assert lg._read(mine, SPACE, chosen) is second
        assert kept(mine, SPACE, chosen) == built_now(mine, SPACE, chosen)


@pytest.mark.parametrize("ranking", ["lexical", "core"])
def test_with_memory_builds_its_list_every_call(ranking):
    """A list of entries (``with_memory``) is never kept: nothing to compare."""
    one = [{"id": "a", "type": "fact", "content": "deploy the billing service"}]
    other = [{"id": "b", "type": "fact", "content": "the dog is Biscuit"}]
    for entries, shown, not_shown in (
        (one, "billing", "Biscuit"),
        (other, "Biscuit", "billing"),
    ):
        got = lg.with_memory([], entries, POOLS, now=NOW, ranking=ranking)
        text = "\n".join(str(message.content) for message in got)
        assert shown in text and not_shown not in text


@pytest.mark.parametrize(
    "odd",
    [
        10**5000,  # too long to print: repr raises ValueError
        float("nan"),  # every NaN prints alike
        datetime(2026, 11, 30, tzinfo=timezone.utc),  # not JSON's
        ["deep"],  # nested past the recursion limit, below
    ],
    ids=["long int", "nan", "datetime", "deep"],
)
def test_a_read_with_a_value_json_does_not_hold_is_built_every_turn(odd):
    """Such a read is never kept (its repr may fail or hide a change), and
    the turn still gives what a build of its read gives."""
    if odd == ["deep"]:
        for _ in range(1200):
            odd = [odd]
    store = InMemoryStore()
    chosen = options()
    store.put(SPACE, "k1", {"id": "a", "type": "fact", "content": "deploy billing"})
    store.put(SPACE, "k2", {"id": "b", "type": "fact", "content": "billing", "x": odd})
    assert lg._read(store, SPACE, chosen) is not lg._read(store, SPACE, chosen)
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)


def test_two_nan_ids_read_alike_are_never_compared():
    """Which NaN object an id is decides the duplicate-id rule; their reprs
    are alike, so a read holding one is never kept."""
    n1, n2 = float("nan"), float("nan")
    store = InMemoryStore()
    chosen = options()
    store.put(SPACE, "a", {"id": n1, "type": "fact", "content": "deploy billing"})
    store.put(SPACE, "b", {"id": n2, "type": "fact", "content": "billing"})
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    store.put(SPACE, "b", {"id": n1, "type": "fact", "content": "billing"})
    assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    assert built_now(store, SPACE, chosen)[1]  # the duplicate is skipped


@pytest.mark.parametrize("ranking", ["lexical", "core"])
@pytest.mark.parametrize(
    "pools",
    [None, POOLS, [*POOLS, Pool("again", max_tokens=40, max_entries=1)]],
    ids=["default", "custom", "sharing a type"],
)
def test_a_kept_build_never_builds_an_index(ranking, pools):
    """Each pool is scored by one loop over its part on every path: a kept
    build's parts build no index (asking for one a second time builds it)."""
    store = InMemoryStore()
    chosen = options(pools, ranking)
    for n in range(30):
        kind = "correction" if n % 3 == 0 else "fact"
        store.put(
            SPACE, f"k{n}", {"id": f"e{n}", "type": kind, "content": f"billing {n}"}
        )
    for _ in range(4):
        assert kept(store, SPACE, chosen) == built_now(store, SPACE, chosen)
    built = lg._read(store, SPACE, chosen)
    assert built.parts.parts and all(
        part._index is None for part in built.parts.parts.values()
    )


def test_a_turns_skipped_and_warnings_are_its_own():
    """A callback that edits one turn's lists changes no later turn's."""
    store = InMemoryStore()
    chosen = options([POOLS[0], Pool("facts", 50, 2, types=("fact",))])
    store.put(
        SPACE,
        "k1",
        {"id": "a", "type": "fact", "content": "billing", "base_priority": "high"},
    )
    store.put(
        SPACE, "k2", {"id": "b", "type": "tip", "scope": "always", "content": "x"}
    )
    _, read = lg._fill(store, SPACE, chosen)(MESSAGE)
    skipped, warnings = [dict(s) for s in read.skipped], list(read.warnings)
    assert skipped and warnings
    read.skipped[0]["reason"] = "edited"
    read.skipped.append({"id": "z", "reason": "added"})
    read.warnings.append("added by a callback")
    _, again = lg._fill(store, SPACE, chosen)(MESSAGE)
    assert again.skipped == skipped and again.warnings == warnings


def test_turns_on_one_kept_build_from_many_threads_agree():
    """The async middleware runs turns in worker threads: at once, on one
    kept build, each gives what one turn alone gives."""
    store = InMemoryStore()
    chosen = options()
    for n in range(200):
        store.put(
            SPACE,
            f"k{n}",
            {"id": f"e{n}", "type": "fact", "content": f"billing {n % 7}"},
        )
    messages = [f"billing {n}" for n in range(7)]
    alone = {m: outcome(lg._fill(store, SPACE, chosen)(m)) for m in messages}
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(
            pool.map(
                lambda m: (m, outcome(lg._fill(store, SPACE, chosen)(m))), messages * 8
            )
        )
    assert all(result == alone[m] for m, result in got)
