"""Property tests: retrieve/retrieve_pools against the README oracle.

Stores are generated with the messy values the README's schema table gives a
meaning to; every call is compared with ``oracle.py`` (written from the
README, sharing no rule with the library) and checked by the one
``check_invariants``. Only public names of poolsplit are used.
"""

import math
import random
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from conftest import NOW
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import (
    OracleError,
    admits,
    check_invariants,
    ids,
    is_always,
    oracle_is_active,
    oracle_retrieve_pools,
    oracle_score,
    snapshot,
)

from poolsplit import (
    Pool,
    default_scorer,
    explain,
    retrieve,
    retrieve_pools,
)

# The stores hold always-scope entries no pool admits on purpose; a library
# that warns about them (PoolsplitWarning) is not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::poolsplit.PoolsplitWarning")
TYPES = ["note", "skill", "task", "correction"]


class Count(int):
    """An int subclass: a positive one is a token_count the README accepts."""


# --- created: a few instants, each written in every README form -------------

UTC = timezone.utc
PLUS5 = timezone(timedelta(hours=5))
PLUS530 = timezone(timedelta(hours=5, minutes=30))
INSTANTS = [
    datetime(2025, 12, 31, tzinfo=UTC),  # a day old
    datetime(2025, 12, 2, 6, 30, tzinfo=UTC),  # a month old
    datetime(2025, 11, 15, 8, 30, 15, 250000, tzinfo=UTC),
    datetime(2025, 9, 1, tzinfo=UTC),  # past the recency floor
    datetime(2025, 6, 1, 12, tzinfo=UTC),  # past the floor: ties with 2025-09-01
    datetime(2026, 3, 1, tzinfo=UTC),  # in the future: 0 days
    datetime(2026, 5, 1, tzinfo=UTC),  # in the future too: ties with 2026-03-01
]


def forms(moment):
    """Every README form of one instant: the values must all read the same."""
    out = [moment, moment.replace(tzinfo=None), moment.astimezone(PLUS5)]
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S")
    local = moment.astimezone(PLUS5).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
    out += [f"{stamp}{fraction}Z", f"{stamp}{fraction}", f"{local}{fraction}+05:00"]
    # The rest of the README's grammar: a space or t, z, +hhmm and +hh, a
    # space before the offset, surrounding whitespace, a comma fraction.
    india = moment.astimezone(PLUS530).strftime("%Y-%m-%dT%H:%M:%S")
    out += [
        f"{stamp.replace('T', ' ')}{fraction}Z",
        f"{stamp.replace('T', 't')}{fraction}z",
        f" {stamp}{fraction}Z\n",
        f"{local}{fraction}+05",
        f"{local}{fraction} +0500",
        f"{india}{fraction}+0530",
    ]
    if fraction:
        out.append(f"{stamp},{fraction[1:]}Z")
    out.append(moment.timestamp())
    if moment.microsecond:
        out.append(f"{stamp}.{moment.microsecond:06d}000Z")  # nine digits
    else:
        out.append(int(moment.timestamp()))
        if moment.second == 0:
            out.append(moment.strftime("%Y-%m-%dT%H:%MZ"))
    if moment.time() == datetime.min.time():
        day = moment.date().isoformat()
        out += [moment.date(), day, f"{day}Z", f" {day} ", f"{day}z"]
    return out


GARBAGE = [
    "garbage",
    "",
    "2025-02-30",
    "2025-13-01",
    "yesterday",
    math.nan,
    math.inf,
    10**400,
    True,
    b"2025-01-01",
    [2025],
]
MISSING = object()  # the key is left out of the entry

CREATED = [form for moment in INSTANTS for form in forms(moment)] + GARBAGE
IDS = ["a", "b", "c", "", "B", -1, 0, 1, 2, 3, 1.0, 2.5, -0.0, math.inf, -math.inf]
IDS += [True, False, (1,), (2, "x"), [2], (), 2**53, 2**53 + 1]
WORDS = [
    "deploy",
    "Deploy",
    "cluster",
    "the",
    "alpha",
    "beta",
    "x",
    "café",
    "cafe\u0301",
    "naïve",
    "v2",
    "123",
    "deploy_cluster",
    "RÉSUMÉ",
]
CONTENTS = [
    *WORDS,
    "deploy the cluster",
    "alpha beta",
    "the café is naïve",
    "DEPLOY cluster alpha",
    "x y z",
    -5,
    1234567,
    ["deploy", "alpha"],
]
PRIORITIES = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 0.5, 0.9, 2.5, 4.75, -2.5]
PRIORITIES += [2**53 + 1, 10**400, -(10**400), math.inf, -math.inf, Fraction(7, 2)]
TAGS = ["a", "b", "1", "", [], ["a"], ["b"], ["a", "b"], ["a", "a", "c"], ["x"]]
TAGS += [["a", 1], [0, 2], [1, "1"], ["c", "b", "a", "x"], ("a",), {"b", 1}]
TAGS += [frozenset(), ()]
TOKEN_COUNTS = [-3, 0, 1, 2, 3, 5, 8, 13, 40, True, False, 7.0, 2.5, "5"]
TOKEN_COUNTS += [Count(3), Count(0), 10**20]

entry_fields = {
    "id": st.sampled_from([MISSING, None, *IDS]),
    "type": st.sampled_from([MISSING, *TYPES, None, 1, ("task",)]),
    "scope": st.sampled_from([MISSING, "always", "context", None, "Always"]),
    "status": st.sampled_from([MISSING, "active", "archived", None, ""]),
    "superseded_by": st.sampled_from([MISSING, None, "", "x", 0, 1]),
    "token_count": st.sampled_from([MISSING, None, *TOKEN_COUNTS]),
    "created": st.one_of(
        st.sampled_from([MISSING, None, *CREATED]), st.floats(1.70e9, 1.78e9)
    ),
    "content": st.sampled_from([MISSING, None, *CONTENTS]),
    "base_priority": st.one_of(
        st.sampled_from([MISSING, None, *PRIORITIES]), st.floats(-10, 10)
    ),
    "tags": st.sampled_from([MISSING, None, *TAGS]),
    "project": st.sampled_from([MISSING, None, "p", "q", 1]),
}

# Values the README says raise: base_priority not a number (TypeError) or
# NaN (ValueError); tags of another type than list, tuple, set, frozenset or
# str (TypeError), even a falsy one.
bad_fields = {
    "base_priority": st.sampled_from(["high", math.nan, True, [5]]),
    "tags": st.sampled_from([0, {"a": 1}, {}, 1.5, False]),
}


@st.composite
def entries(draw, bad=False):
    entry = {}
    for key, values in entry_fields.items():
        value = draw(values)
        if value is not MISSING:
            entry[key] = value
    if bad and draw(st.integers(0, 3)) == 0:
        key = draw(st.sampled_from(sorted(bad_fields)))
        entry[key] = draw(bad_fields[key])
    return entry


@st.composite
def stores(draw, max_size=20, bad=False):
    """Variants of one to three template entries, so scores often tie; ids
    from a few values and ``created`` in several forms of one or two instants,
    so the tie-break (created, then id, then position) decides often."""
    templates = draw(st.lists(entries(bad=bad), min_size=1, max_size=3))
    ids_ = draw(
        st.lists(st.sampled_from([MISSING, None, *IDS]), min_size=1, max_size=4)
    )
    moments = draw(st.lists(st.sampled_from(INSTANTS), min_size=1, max_size=2))
    created = [MISSING, *GARBAGE[:3], *(form for m in moments for form in forms(m))]
    store = []
    for _ in range(draw(st.integers(0, max_size))):
        entry = dict(draw(st.sampled_from(templates)))
        changed = {
            "id": draw(st.sampled_from(ids_)),
            "created": draw(st.sampled_from(created)),
        }
        for key in sorted(
            draw(st.sets(st.sampled_from(sorted(entry_fields)), max_size=2))
        ):
            changed[key] = draw(entry_fields[key])
        for key, value in changed.items():
            if value is MISSING:
                entry.pop(key, None)
            else:
                entry[key] = value
        store.append(entry)
    return store


floors = st.one_of(
    st.none(),
    st.sampled_from([-math.inf, 0, 1, 2.5, 4.0, 5, math.inf]),
    st.floats(-2, 12),
)


POOL_TYPES = [None, ("note",), ("task",), ("task", "skill"), ("correction", "note")]
POOL_TYPES += [("skill", "note", "task"), ("correction",), ("other",), ()]


@st.composite
def pool_lists(draw, min_size=1, max_size=4):
    count = draw(st.integers(min_size, max_size))
    pools = []
    for number in range(count):
        kinds = draw(st.sampled_from(POOL_TYPES))
        fields = {
            "max_tokens": draw(st.integers(0, 60)),
            "max_entries": draw(st.integers(0, 8)),
            "types": kinds,
        }
        fields["min_score"] = draw(floors)
        pools.append(Pool(f"p{number}", **fields))
    return pools


MESSAGES = ["", "deploy cluster", "alpha beta gamma", "the café", "Cafe\u0301 DEPLOY"]
CONTEXT_TAGS = [[], ["a"], ["b", "c"], ["a", "x", "1"], ["1"], ["c", "a", "b"]]


@st.composite
def contexts(draw):
    if draw(st.integers(0, 5)) == 0:
        return None
    fields = {
        "message": st.sampled_from([MISSING, *MESSAGES, None]),
        "tags": st.sampled_from([MISSING, *CONTEXT_TAGS]),
        "project": st.sampled_from([MISSING, None, "p", "q", 1]),
    }
    context = {key: draw(values) for key, values in fields.items()}
    return {key: value for key, value in context.items() if value is not MISSING}


def positions(store, result):
    """A result as input positions (the first, for an object listed twice)."""
    first = {}
    for index, entry in enumerate(store):
        first.setdefault(id(entry), index)
    return {name: [first[id(e)] for e in chosen] for name, chosen in result.items()}


def lazily(call, failure):
    """The call when the oracle says it MAY fail (README, the lazy read): it
    fails naming one of the unreadable entries, or returns (returned here)."""
    try:
        return call()
    except failure.types as exc:
        named = [f"entries[{i}] " for i in failure.unread]
        assert any(label in str(exc) for label in named), (str(exc), named)
        return None


def assert_agrees(store, pools, context=None, **hooks):
    """retrieve_pools equals the oracle (result or error); invariants hold."""
    oracle_hooks = {k: v for k, v in hooks.items() if v is not None}
    before = snapshot(store)

    def call():
        return retrieve_pools(store, pools, context, now=NOW, **oracle_hooks)

    try:
        expected = oracle_retrieve_pools(store, pools, context, now=NOW, **oracle_hooks)
    except OracleError as exc:
        if exc.result is not None:
            result = lazily(call, exc)
            if result is not None:
                assert positions(store, result) == positions(store, exc.result)
            return result
        with pytest.raises(exc.types):
            call()
        assert store == before[0]
        return None
    result = call()
    check_invariants(store, pools, context, result, before=before, now=NOW, **hooks)
    assert positions(store, result) == positions(store, expected)
    return result


# --- Agreement with the oracle ----------------------------------------------


# Shrunk failures (see test_oracle_cases.py): one instant in two forms ties on
# created, so the id (then position) decides; unparseable created values go
# by type and repr; ids that are neither str nor number tie (README).
@given(stores(), pool_lists(), contexts())
@example(
    store=[{"created": "2025-12-31T00:00Z"}, {"created": INSTANTS[0]}],
    pools=[Pool("p0", 1, 1)],
    context=None,
)
@example(
    store=[{"id": "a", "created": "zzz"}, {"id": "b", "created": "aaa"}],
    pools=[Pool("p0", 10, 1)],
    context=None,
)
@example(store=[{"id": (1,)}, {"id": [2]}], pools=[Pool("p0", 10, 1)], context=None)
def test_retrieve_pools_agrees_with_oracle(store, pools, context):
    """Default hooks, messy stores, several pools: the oracle's selection."""
    assert_agrees(store, pools, context)


@given(stores(), pool_lists(max_size=1), contexts())
@example(
    store=[{"created": INSTANTS[0]}, {"created": "2025-12-31T00:00:00Z"}],
    pools=[Pool("p0", 1, 1)],
    context=None,
)
@example(
    store=[{"created": "garbage"}, {"created": ""}],
    pools=[Pool("p0", 1, 1)],
    context=None,
)
def test_retrieve_agrees_with_oracle(store, pools, context):
    """retrieve is retrieve_pools with one pool."""
    (pool,) = pools
    before = snapshot(store)
    try:
        expected = oracle_retrieve_pools(store, pools, context, now=NOW)
    except OracleError as exc:
        with pytest.raises(exc.types):
            retrieve(store, pool, context, now=NOW)
        return
    got = retrieve(store, pool, context, now=NOW)
    check_invariants(store, pools, context, {pool.name: got}, before=before, now=NOW)
    assert [id(e) for e in got] == [id(e) for e in expected[pool.name]]


@given(stores(max_size=12, bad=True), pool_lists(), contexts())
@example(store=[{"tags": 0}], pools=[Pool("p0", 0, 0)], context=None)
def test_errors_agree_with_oracle(store, pools, context):
    """A bad base_priority or tags raises the README's error type exactly when
    the entry is scored (active, not always-scope, admitted by some pool)."""
    assert_agrees(store, pools, context)


class Unreadable:
    """A content whose str() raises (like 10**5000 past the digit limit)."""

    def __init__(self, error):
        self.error = error

    def __str__(self):
        raise self.error("cannot become text")

    def __repr__(self):
        return f"Unreadable({self.error.__name__})"

    def __eq__(self, other):  # a deep copy (the no-mutation check) is equal
        return isinstance(other, Unreadable) and other.error is self.error

    def __hash__(self):
        return hash(self.error)


@st.composite
def unreadable_stores(draw):
    """Stores where some contents cannot become text."""
    store = draw(stores(max_size=12))
    for entry in store:
        if draw(st.integers(0, 3)) == 0:
            entry["content"] = Unreadable(
                draw(st.sampled_from([TypeError, ValueError]))
            )
    return store


@given(unreadable_stores(), pool_lists(), contexts(), st.booleans())
@example(  # never reached: the pool is full first
    store=[
        {"id": "a", "base_priority": 9},
        {"id": "c", "base_priority": 5},
        {"id": "b", "base_priority": 1, "content": Unreadable(ValueError)},
    ],
    pools=[Pool("p0", 100, 1)],
    context=None,
    floats=False,
)
def test_lazy_read_agrees_with_oracle(store, pools, context, floats):
    """README, the lazy read: a content that cannot become text, or a counter
    returning a float for it, fails the call naming the entry when retrieval
    reaches it; otherwise the call returns what it returns without it."""

    def counter(text):
        return 2.5 if floats and text.startswith("x") else max(1, len(text) // 4)

    assert_agrees(store, pools, context, token_counter=counter)


SCORES = [0, 1, 2, 2.5, -1, -0.0, math.inf, -math.inf, Fraction(5, 2), 10**400]


@given(stores(), pool_lists(), contexts(), st.integers(0, 2**32 - 1))
def test_custom_hooks_agree_with_oracle(store, pools, context, seed):
    """A caller's scorer, counter and predicate: still the oracle's answer."""
    rng = random.Random(seed)
    table = {}

    def scorer(entry, context, *, now):
        return table.setdefault(id(entry), rng.choice(SCORES))

    def counter(text):
        return len(text) % 7 - 2  # 0 or less costs 1

    def is_active(entry):
        return len(str(entry.get("id"))) % 3  # truthy, not bool

    assert_agrees(
        store, pools, context, scorer=scorer, token_counter=counter, is_active=is_active
    )


@given(stores(), pool_lists(), contexts())
def test_custom_scorer_is_called_once_per_eligible_entry(store, pools, context):
    """Every active context entry some pool admits is scored exactly once,
    with the context and an aware ``now``; no other entry is scored."""
    calls = []

    def scorer(entry, got_context, *, now):
        assert got_context is context
        assert now == NOW and now.tzinfo is not None
        calls.append(id(entry))
        return len(calls) % 3

    retrieve_pools(store, pools, context, scorer=scorer, now=NOW)
    first = {}
    for entry in store:
        first.setdefault(id(entry), entry)
    eligible = [
        key
        for key, entry in first.items()
        if oracle_is_active(entry)
        and not is_always(entry)
        and any(admits(pool, entry) for pool in pools)
    ]
    assert sorted(calls) == sorted(eligible)


@given(entries(bad=True), contexts())
@example({"tags": 0}, None)
@example({"tags": ["a"], "base_priority": 4}, {"tags": ["a"]})
@example({"project": "x", "base_priority": 4}, {"project": "x"})
def test_default_scorer_equals_oracle_score(entry, context):
    """The public default_scorer gives the oracle's float, bit for bit, or the
    same error type."""
    try:
        expected = oracle_score(entry, context, now=NOW)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            default_scorer(entry, context, now=NOW)
        return
    got = default_scorer(entry, context, now=NOW)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert math.copysign(1, got) == math.copysign(1, expected)


@given(
    st.floats(-5, 400),
    st.sampled_from([None, "deploy cluster", "deploy"]),
    st.sampled_from([1, 7, 2.5, 10]),
)
@example(90.0, None, 7)
@example(89.999, "deploy", 7)
def test_recency_at_every_age_equals_oracle(days, message, priority):
    """Ages on both sides of the recency floor (90 days), and the future."""
    created = (NOW - timedelta(days=days)).isoformat()
    entry = {"base_priority": priority, "created": created, "content": "deploy it"}
    context = {"message": message}
    assert default_scorer(entry, context, now=NOW) == oracle_score(
        entry, context, now=NOW
    )
    assert_agrees([entry, {"base_priority": priority}], [Pool("p", 100, 1)], context)


# --- Invariants the README states -----------------------------------------


@given(stores(), pool_lists(), contexts())
def test_explain_selects_what_retrieve_pools_selects(store, pools, context):
    """explain() reads the same scan: its selection is the real one."""
    try:
        plain = retrieve_pools(store, pools, context, now=NOW)
    except (TypeError, ValueError):
        return
    report = explain(store, pools, context, now=NOW)
    assert ids(report.selected()) == ids(plain)


@given(stores(), st.lists(entries(), max_size=20), pool_lists(max_size=1))
def test_always_scope_survives_a_flood(store, fresh, pools):
    """Always-scope entries load under any budget and any flood of top entries."""
    (pool,) = pools
    flood = [
        dict(entry, base_priority=1e9, created=NOW, scope=None, status=None)
        for entry in fresh
    ]
    full = flood + store
    for budget in (pool, Pool("z", 0, 0, pool.types)):
        before = snapshot(full)
        got = retrieve(full, budget, now=NOW)
        result = {budget.name: got}
        check_invariants(full, [budget], None, result, before=before, now=NOW)
        always = []
        for entry in full:
            wanted = (
                is_always(entry) and oracle_is_active(entry) and admits(budget, entry)
            )
            if wanted and not any(entry is e for e in always):
                always.append(entry)
        assert [id(e) for e in got[: len(always)]] == [id(e) for e in always]


@given(stores(), pool_lists(), contexts(), st.randoms(use_true_random=False))
def test_input_order_does_not_matter_when_keys_are_distinct(store, pools, context, rnd):
    """With distinct ids (so no tie reaches the input position), a shuffled
    store selects the same entries in the same context order."""
    store = [dict(entry, id=f"id{i:03d}") for i, entry in enumerate(store)]
    try:
        first = retrieve_pools(store, pools, context, now=NOW)
    except (TypeError, ValueError):
        return
    shuffled = list(store)
    rnd.shuffle(shuffled)
    before = snapshot(shuffled)
    other = retrieve_pools(shuffled, pools, context, now=NOW)
    check_invariants(shuffled, pools, context, other, before=before, now=NOW)
    for name in first:
        assert [id(e) for e in first[name] if not is_always(e)] == [
            id(e) for e in other[name] if not is_always(e)
        ]
        assert {id(e) for e in first[name]} == {id(e) for e in other[name]}


@given(stores(), pool_lists(), contexts())
def test_pools_equal_sequential_retrieve(store, pools, context):
    """retrieve_pools equals pool-by-pool retrieve on what earlier pools left."""
    try:
        result = retrieve_pools(store, pools, context, now=NOW)
    except (TypeError, ValueError):
        return
    left = list(store)
    for pool in pools:
        got = retrieve(left, pool, context, now=NOW)
        assert [id(e) for e in got] == [id(e) for e in result[pool.name]]
        taken = {id(e) for e in got}
        left = [e for e in left if id(e) not in taken]


@given(stores(), pool_lists(), contexts(), st.lists(st.integers(0, 24), max_size=10))
@example(
    store=[{"created": "garbage"}, {"created": ""}],
    pools=[Pool("p0", 1, 1)],
    context=None,
    picks=[],
)
def test_repeated_objects_agree_with_oracle(store, pools, context, picks):
    """An object listed twice is one entry, at its first position."""
    repeated = store + [store[i % len(store)] for i in picks] if store else []
    random.Random(len(picks)).shuffle(repeated)
    assert_agrees(repeated, pools, context)


@given(stores(), pool_lists(), contexts(), st.sampled_from(["scorer", "is_active"]))
def test_errors_from_a_callers_hook_propagate_unchanged(store, pools, context, hook):
    """The very exception object a caller's scorer or predicate raises comes
    out of the call, whenever the hook is called at all."""
    failure = KeyError("from the hook")

    def broken(*args, **kwargs):
        raise failure

    if hook == "scorer":
        called = any(
            oracle_is_active(e)
            and not is_always(e)
            and any(admits(pool, e) for pool in pools)
            for e in store
        )
    else:
        called = bool(store)
    if not called:
        retrieve_pools(store, pools, context, now=NOW, **{hook: broken})
        return
    with pytest.raises(KeyError) as caught:
        retrieve_pools(store, pools, context, now=NOW, **{hook: broken})
    assert caught.value is failure


def test_error_from_a_callers_counter_propagates_unchanged():
    """The counter's own exception, not a wrapped one."""
    failure = KeyError("from the counter")

    def counter(text):
        raise failure

    with pytest.raises(KeyError) as caught:
        retrieve(
            [{"id": "a", "content": "x"}],
            Pool("p", 10, 1),
            token_counter=counter,
            now=NOW,
        )
    assert caught.value is failure
