"""The scan's in-place reads (issue 35, scan39).

``_scan`` reads the usual kinds of value itself, past a call to their reader,
running none of their own code: an int, float or None ``base_priority``,
None or a list of str ``tags``, a str or None ``project`` and ``created``, a
str ``type``, and, with the default ``is_active``, an entry whose ``status``
and ``superseded_by`` are None; every other kind of value, and every
TypeError, ValueError or OverflowError on the way, goes to the readers
(``_base_score``, ``entry_type``, ``is_active``), which read it once
(tests/test_review39.py). These properties pin the
scan, entry by entry, to the readers and to the README's oracle, on messy
values, with the timestamp cache cold and warm, and pin its errors (type,
message, position) to the readers' own.
"""

import math
from collections.abc import Mapping
from datetime import date, datetime, timezone
from decimal import Decimal
from fractions import Fraction

import pytest
from conftest import NOW
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import oracle_is_active, oracle_score, type_of

import poolsplit


class Number(int):
    """An int subclass: not the scan's usual int."""


class Text(str):
    """A str subclass: not the scan's usual str."""


class Unequal:
    """A project whose comparison fails."""

    def __eq__(self, other):
        raise ValueError("cannot compare")

    __hash__ = None


class Falsy:
    """A ``superseded_by`` whose truth fails."""

    def __bool__(self):
        raise TypeError("no truth")


class Entry(Mapping):
    """A Mapping that is not a dict: the readers read it the same way."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


moment = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
priorities = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**6),
    st.floats(),
    st.sampled_from(
        [True, False, 10**400, -(10**400), 2**1024, Number(3), Fraction(5, 2)]
    ),
    st.sampled_from([Decimal("2.5"), Decimal("NaN"), "5", [5], math.inf, -math.inf]),
)
tag_values = st.sampled_from(["a", "b", Text("a"), 7, None, ("a",), ""])
tags = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
    st.lists(tag_values, max_size=3),
    st.lists(tag_values, max_size=3).map(tuple),
    st.frozensets(st.sampled_from(["a", "c", 7])),
    st.sets(st.sampled_from(["a", "c"])),
    st.sampled_from(["a", Text("b"), "", {}, {"a": 1}, 5, 0, [["a"]]]),
)
createds = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2025-06-01T12:00:00+00:00",
            "2025-06-01",
            Text("2025-06-01"),
            "",
            "soon",
            "2025-02-30",
            moment,
            moment.replace(tzinfo=None),
            date(2025, 6, 1),
            1.7e9,
            1_700_000_000,
            math.nan,
            math.inf,
            True,
            10**400,
            ["2025-06-01"],
        ]
    ),
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from([None, "note", "skill", Text("note"), 3, ["x"], ""]),
        "status": st.sampled_from([None, "active", "archived", "", 0, Text("active")]),
        "superseded_by": st.sampled_from([None, "", "e1", 0, 1, [], Falsy()]),
        "base_priority": priorities,
        "tags": tags,
        "created": createds,
        "project": st.sampled_from([None, "p", "q", 7, Unequal()]),
    },
)
contexts = st.fixed_dictionaries(
    {
        "tags": st.lists(st.sampled_from(["a", "b", "7", ""]), max_size=3),
        "project": st.sampled_from([None, "p", 7]),
    }
)


def by_the_readers(entry, query, is_active):
    """What the scan must give for one entry at position 0, or the error the
    readers raise: (active, type key, score, instant)."""
    kind = poolsplit.entry_type(entry)
    if not is_active(entry):
        return False, None, None, None
    score, seconds = poolsplit._base_score(entry, query, 0)
    return True, poolsplit._type_key(kind), score, seconds


def by_the_scan(entry, call):
    scan = poolsplit._scan([entry], call, exact=False)
    if not scan.ranked:
        return False, scan.keys[0], None, None
    return True, scan.keys[0], scan.scores[0], scan.instants[0]


def outcome(read, *args):
    try:
        return read(*args)
    except Exception as exc:  # the error itself is the outcome
        return type(exc), str(exc), getattr(exc, "index", None)


def same(got, want):
    """Equal, NaN matching NaN (no score is NaN, but compare bit for bit)."""
    return repr(got) == repr(want)


@pytest.mark.parametrize("mapping", [dict, Entry])
@given(entries, contexts, st.booleans(), st.booleans())
@example({"base_priority": 10**400, "tags": ["a"]}, {"tags": ["a"]}, False, False)
@example({"tags": ["a", 7], "created": "2025-06-01"}, {"tags": ["7"]}, True, False)
@example({"project": Unequal(), "created": Text("2025-06-01")}, {}, True, False)
@example({"superseded_by": Falsy()}, {}, False, False)
@example({"base_priority": True, "tags": {}}, {}, False, True)
def test_the_scan_reads_each_entry_as_its_readers_do(
    mapping, entry, context, warm, own_is_active
):
    """Entry by entry, the scan's activity, type key, first score and instant
    are the readers', and a failing entry fails with the readers' error."""
    poolsplit.clear_caches()
    if warm:  # the cache holds a created str: the scan reads it in place
        outcome(poolsplit.parse_created, entry.get("created"))
    entry = mapping(entry)
    is_active = poolsplit.default_is_active
    if own_is_active:  # a caller's predicate: the scan calls it for every entry

        def is_active(entry):
            return poolsplit.default_is_active(entry)

    call = poolsplit._check_call(
        [poolsplit.Pool("all", 100, 10)],
        context,
        poolsplit.default_scorer,
        poolsplit.default_token_counter,
        is_active,
        NOW,
    )
    want = outcome(by_the_readers, entry, call.query, is_active)
    got = outcome(by_the_scan, entry, call)
    assert same(got, want)
    if len(want) == 4 and want[0]:  # and the README's rules say the same
        assert oracle_is_active(entry)
        assert want[1] == type_of(entry) or want[1] is poolsplit._UNHASHABLE
        message_free = dict(context, message=None)
        assert same(got[2], oracle_score(entry, message_free, now=NOW))


def test_an_unusual_value_after_a_usual_one_is_read_by_its_reader():
    """In one store, the usual values read in place and the others read by
    the readers give the scores the README's formula gives."""
    poolsplit.clear_caches()
    day = "2025-12-02"
    store = [
        {"id": "a", "base_priority": 4, "tags": ["x"], "created": day},
        {"id": "b", "base_priority": 4.0, "tags": ("x",), "created": day},
        {"id": "c", "base_priority": Number(4), "tags": "x", "created": Text(day)},
        {"id": "d", "base_priority": 10**400, "tags": ["x", 7], "project": "p"},
    ]
    chosen = poolsplit.retrieve(
        store, poolsplit.Pool("p", 100, 4), {"tags": ["x"], "project": "p"}, now=NOW
    )
    assert [entry["id"] for entry in chosen] == ["d", "a", "b", "c"]
    scan = poolsplit._scan(
        store,
        poolsplit._check_call(
            [poolsplit.Pool("p", 100, 4)],
            {"tags": ["x"]},
            poolsplit.default_scorer,
            poolsplit.default_token_counter,
            poolsplit.default_is_active,
            NOW,
        ),
        exact=False,
    )
    assert scan.scores[:3] == [4 * (1 - 0.7 * 30 / 90) * 1.5] * 3
    assert scan.scores[3] == math.inf


class Untextable:
    """A content whose str() fails."""

    def __str__(self):
        raise TypeError("no text")


def test_explain_names_the_position_of_a_content_that_cannot_become_text():
    """explain() scores exactly in the scan (a message, every score final):
    a content whose str() fails there is named by its position and id."""
    store = [{"id": "a"}, {"id": "b", "content": Untextable(), "token_count": 5}]
    with pytest.raises(TypeError, match=r"^entries\[1\] \(id='b'\): no text$"):
        poolsplit.explain(store, [poolsplit.Pool("p", 100, 1)], {"message": "deploy"})
