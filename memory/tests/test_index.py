"""The recall index gives what poolsplit.retrieve_pools gives on every entry.

The index only chooses which entries the core sees; these tests hold it to
the core's result on random stores, pools and contexts, the core reading
every entry being the oracle. ``_subset._MAX_SHARE`` is set to 1 and
``_GROUP_SHARE`` to 0 so that a small store takes the index's path (a real
one leaves it past a quarter of the namespace, or with a group per few
entries), and the tests check that it did.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import math
import os
import re
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any

import poolsplit
import pytest
import snowballstemmer
from hypothesis import example, given, settings
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import _index, _subset, default_pools, open_store
from poolsplit_memory._ranking import Statistics, floored

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
WORDS = ("billing", "deploy", "search", "report", "invoice", "rollback", "cache")
TAGS = ("api", "db", "ui")
TYPES = ("correction", "task", "fact", "skill", "note")
CREATED = (
    None,
    "2026-06-01T00:00:00Z",  # now
    "2026-06-20",  # future: no decay
    "2026-05-25T12:00:00Z",
    "2026-05-01",
    "2026-03-01",  # past the recency horizon: the floor
    "2025-01-01",
    1700000000,  # POSIX seconds
    "soon",  # no instant: no decay
)

entries_st = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(TYPES),
            "content": st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join),
        },
        optional={
            "base_priority": st.one_of(
                st.sampled_from([0, 1, 5, 9, -2, 2.5]),
                st.floats(-10, 10, allow_nan=False),
                # near the float limit a tag and a project overflow
                st.sampled_from([1.7e308, -1.7e308, 1.2e308, 9e307, 4.5e307]),
                st.builds(
                    lambda x, sign: x * sign,
                    st.floats(1e307, 1.7976931348623157e308),
                    st.sampled_from([1.0, -1.0]),
                ),
            ),
            "created": st.sampled_from(CREATED),
            "tags": st.lists(st.sampled_from(TAGS), max_size=3),
            "project": st.sampled_from(["shop", "blog"]),
            "scope": st.just("always"),
            "token_count": st.integers(1, 60),
        },
    ),
    max_size=60,
)

# (max_tokens, max_entries, types, min_score) of each pool
pools_st = st.lists(
    st.tuples(
        st.integers(0, 120),
        st.integers(0, 5),
        st.one_of(st.none(), st.lists(st.sampled_from(TYPES), max_size=3).map(tuple)),
        st.one_of(st.none(), st.floats(0, 8)),
    ),
    min_size=1,
    max_size=4,
)

context_st = st.fixed_dictionaries(
    {
        "message": st.lists(st.sampled_from(WORDS + ("the", "x")), max_size=4).map(
            " ".join
        ),
        "tags": st.lists(st.sampled_from(TAGS), max_size=2),
        "project": st.sampled_from([None, "shop", "blog"]),
    }
)


def named(pools: list[tuple[Any, ...]]) -> list[Pool]:
    return [
        Pool(f"p{i}", tokens, count, types, min_score=floor)
        for i, (tokens, count, types, floor) in enumerate(pools)
    ]


def identities(result: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {name: [id(entry) for entry in chosen] for name, chosen in result.items()}


@pytest.fixture(autouse=True)
def index_path_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 0)


def check(
    entries: list[dict[str, Any]], pools: list[Pool], context: dict[str, Any]
) -> None:
    """The same entries per pool, and the same warnings word for word."""
    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        expected = poolsplit.retrieve_pools(entries, pools, context, now=NOW)
    index = _index.Index(entries)
    assert index.usable
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = index.recall(
            pools, context, now=NOW, token_counter=poolsplit.default_token_counter
        )
    assert identities(got) == identities(expected)
    assert [str(w.message) for w in got_warnings] == [
        str(w.message) for w in expected_warnings
    ]


@settings(max_examples=400)
@given(entries_st, pools_st, context_st)
@example(  # a tie across groups at the last place a pool fills
    [
        {"type": "task", "content": "billing", "base_priority": 3},
        {"type": "task", "content": "deploy", "base_priority": 4.5},
        {"type": "task", "content": "billing", "base_priority": 3},
    ],
    [(100, 1, ("task",), None)],
    {"message": "billing", "tags": [], "project": None},
)
@example(  # a score that overflows to -inf is a bound, not "nothing left"
    [
        {"type": "task", "content": "alpha"},
        {"type": "task", "content": "gamma", "base_priority": 4},
        {
            "type": "task",
            "content": "beta",
            "base_priority": -1.5e308,
            "project": "shop",
        },
    ],
    [(100, 1, ("task",), None), (100, 2, ("task",), None)],
    {"message": "", "tags": [], "project": "shop"},
)
@example(  # subnormal products round by an absolute amount (the first wins
    # the tie: without the absolute margin the index keeps only the second)
    [
        {
            "type": "task",
            "content": "tagged",
            "base_priority": 5e-324,
            "project": "blog",
            "tags": ["api"],
        },
        {"type": "task", "content": "plain", "base_priority": 5e-324},
    ],
    [(100, 1, ("task",), None)],
    {"message": "", "tags": ["api"], "project": "shop"},
)
@example(  # the relative margin: X's bound without it is one ulp below its
    # score, which ties with L's; X wins the tie by its id
    [
        {
            "id": "a",
            "type": "task",
            "content": "zzz",
            "base_priority": 3.59,
            "project": "shop",
            "tags": ["api", "db", "ui"],
        },
        {
            "id": "b",
            "type": "task",
            "content": "billing",
            "base_priority": 6.282500000000001,
        },
    ],
    [(100, 1, ("task",), None)],
    {
        "message": "billing deploy search report invoice rollback cache",
        "tags": ["api"],
        "project": "shop",
    },
)
@example(  # near the float limit the scorer's order (x 1.5 tags, then
    # x 0.5 project) overflows to inf where the index's (x 0.5, then x 1.5)
    # gives 1.275e308: the bound must be infinite
    [
        {
            "type": "task",
            "content": "billing",
            "base_priority": 1.7e308,
            "tags": ["api"],
            "project": "shop",
        },
        {"type": "task", "content": "deploy", "base_priority": 1.6e308},
    ],
    [(100, 1, ("task",), None)],
    {"message": "", "tags": ["api"], "project": "blog"},
)
@example(  # a later pool whose subset candidates an earlier pool took
    [
        {"id": "A", "type": "task", "content": "a", "base_priority": 5},
        {"id": "B", "type": "task", "content": "b", "base_priority": 4},
    ],
    [(100, 1, None, None), (100, 1, None, None)],
    {"message": "", "tags": [], "project": None},
)
def test_same_result_as_the_core(
    entries: list[dict[str, Any]],
    pools: list[tuple[Any, ...]],
    context: dict[str, Any],
) -> None:
    check(entries, named(pools), context)


def test_a_bound_near_the_float_limit_is_not_below_an_overflowed_score() -> None:
    """Issue 35: priority 1.7e308, a tag (x 1.5) and another project (x 0.5)
    score inf (the scorer multiplies the tag first); the index's bound was
    1.7e308 x 0.5 x 1.5, and the walk took the entry of 1.6e308 instead."""
    entries = [
        {
            "id": "overflows",
            "type": "task",
            "content": "billing",
            "base_priority": 1.7e308,
            "tags": ["api"],
            "project": "shop",
        },
        {"id": "finite", "type": "task", "content": "deploy", "base_priority": 1.6e308},
    ]
    context = {"message": "", "tags": ["api"], "project": "blog"}
    assert poolsplit.default_scorer(entries[0], context, now=NOW) == math.inf
    index = _index.Index(entries)
    call = index._call(context, NOW)
    assert call is not None
    assert _index._widened(index._boosted_bound(0, call)) == math.inf
    pools = [Pool("tasks", 100, 1, ("task",))]
    got = index.recall(
        pools, context, now=NOW, token_counter=poolsplit.default_token_counter
    )
    assert [e["id"] for e in got["tasks"]] == ["overflows"]
    check(entries, pools, context)


@settings(max_examples=200)
@given(entries_st, context_st)
def test_same_result_with_the_default_pools(
    entries: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    pools = default_pools({str(e["type"]) for e in entries})
    check(entries, pools, context)


@given(st.lists(st.sampled_from(CREATED[1:7]), min_size=1, max_size=30), context_st)
def test_ties_at_the_recency_floor(created: list[str], context: dict[str, Any]) -> None:
    """Many entries with one score (the floor): the tie order is the core's."""
    entries = [
        {"type": "task", "content": "report", "created": c, "id": f"t{n % 3}"}
        for n, c in enumerate(created)
    ]
    check(entries, [Pool("tasks", 40, 2, ("task",))], context)


@settings(max_examples=500)
@given(entries_st.filter(bool), context_st, st.integers(-400, 400))
@example(
    [
        {
            "type": "task",
            "content": "zzz",
            "base_priority": 3.59,
            "project": "shop",
            "tags": ["api", "db", "ui"],
        }
    ],
    {"message": "billing", "tags": ["api"], "project": "shop"},
    0,
)
def test_bounds_are_never_below_the_score(
    entries: list[dict[str, Any]], context: dict[str, Any], hours: int
) -> None:
    """The bounds the index ranks by, widened as it widens them, are at least
    the scorer's score: the base with the call's project alone, and a boosted
    entry's bound of its own shares in the whole context."""
    now = NOW + timedelta(hours=hours)
    index = _index.Index(entries)
    call = index._call(context, now)
    assert call is not None
    for position, entry in enumerate(entries):
        if entry.get("scope") is not None:
            continue
        base = poolsplit.default_scorer(entry, {"project": context["project"]}, now=now)
        assert _index._widened(index._base(position, call)) >= base
        score = poolsplit.default_scorer(entry, context, now=now)
        assert _index._widened(index._boosted_bound(position, call)) >= score


@settings(max_examples=300)
@example(  # the oldest of a lower negative priority outranks a higher one
    [("2026-06-01", -1), ("2026-06-01", -2), ("2025-01-01", -2)],
    1,
    {"message": "", "tags": [], "project": None},
)
@example(  # an undated entry (no decay) is the last of its negative group:
    # ranked first, its -5 hid the dated -5 (x 0.3 at the floor: -1.5)
    [(None, -5), (None, -2), ("2026-03-01", -5)],
    1,
    {"message": "", "tags": [], "project": None},
)
@example(  # -1 is negative too: its dated entry (x recency) beats its undated
    # one; a mutant filing -1 as positive (undated first) left it out
    [(None, -1), (None, 0), ("2026-03-01", -2), ("2026-03-01", -1)],
    2,
    {"message": "", "tags": [], "project": None},
)
@given(
    st.lists(
        st.tuples(st.sampled_from(CREATED), st.sampled_from([-5, -2, -1, 0, 0.0, 3])),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 3),
    context_st,
)
def test_negative_and_zero_priorities(
    rows: list[tuple[Any, float]], count: int, context: dict[str, Any]
) -> None:
    """A negative priority ranks the oldest first; zero scores all tie."""
    entries = [
        {"type": "task", "content": WORDS[n % 3], "created": c, "base_priority": p}
        for n, (c, p) in enumerate(rows)
    ]
    check(entries, [Pool("tasks", 1000, count, ("task",))], context)


def test_an_undated_entry_comes_last_among_its_negative_priority() -> None:
    """A negative priority ranks the oldest first and an undated entry (no
    decay: the whole priority) last; a group walked undated first offered
    -5 before its dated -1.5, and the walk stopped at the other group's -2
    (the shrunk case of a mutant that ranked the undated first)."""
    entries = [
        {"id": "undated", "type": "task", "content": "a", "base_priority": -5},
        {"id": "other", "type": "task", "content": "b", "base_priority": -2},
        {
            "id": "dated",
            "type": "task",
            "content": "c",
            "base_priority": -5,
            "created": "2026-03-01",
        },
    ]
    context = {"message": "", "tags": [], "project": None}
    pools = [Pool("tasks", 1000, 1, ("task",))]
    got = _index.Index(entries).recall(
        pools, context, now=NOW, token_counter=poolsplit.default_token_counter
    )
    assert [e["id"] for e in got["tasks"]] == ["dated"]  # -5 x 0.3
    check(entries, pools, context)


def core_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of entries of each call the index makes to the core, as
    the test goes on."""
    sizes: list[int] = []
    core = _index.Index._core

    def counting(self: _index.Index, chosen: Any, *args: Any) -> Any:
        sizes.append(len(chosen))
        return core(self, chosen, *args)

    monkeypatch.setattr(_index.Index, "_core", counting)
    return sizes


def test_a_large_store_reads_a_small_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the index: a 2,000-entry store's recall gives the core a
    few dozen entries, and the same result."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 4)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 8)
    entries = [
        {
            "type": TYPES[n % len(TYPES)],
            "content": f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3) % len(WORDS)]}",
            "created": (NOW - timedelta(hours=7 * n)).isoformat(),
            "base_priority": n % 10,
        }
        for n in range(2000)
    ]
    seen = core_calls(monkeypatch)
    pools = default_pools(TYPES)
    context = {"message": "billing deploy", "tags": [], "project": None}
    check(entries, pools, context)
    assert seen and max(seen) < 100


@pytest.mark.parametrize(
    "odd",
    [
        {"type": "task", "content": "x", "scope": "Always"},  # the core warns
        {"type": "task", "content": "x", "project": ["shop"]},  # unhashable
        {"type": "task", "content": "x", "scope": "session"},
        {"type": "task", "content": "x", "tags": "api"},  # one tag, to the core
    ],
)
def test_an_entry_it_does_not_model_gives_the_core_everything(
    odd: dict[str, Any],
) -> None:
    entries = [{"type": "task", "content": "report"}, odd]
    index = _index.Index(entries)
    assert not index.usable
    pools = [Pool("tasks", 100, 1, ("task",))]
    context = {"message": "report", "tags": [], "project": None}
    near_always = odd.get("scope") == "Always"
    with pytest.warns(poolsplit.PoolsplitWarning) if near_always else _no_op():
        got = index.recall(
            pools, context, now=NOW, token_counter=poolsplit.default_token_counter
        )
    assert got["tasks"][0] is entries[0]


@pytest.mark.parametrize(
    "context",
    [
        {"message": "report", "tags": "api", "project": None},  # a bare str tag
        {"message": "report", "tags": ["api", 3], "project": None},
    ],
)
def test_a_context_it_does_not_model_goes_to_the_core(context: dict[str, Any]) -> None:
    entries = [
        {"type": "task", "content": "report", "tags": ["api"]},
        {"type": "task", "content": "report", "tags": ["3"]},
        {"type": "task", "content": "report"},
    ]
    check(entries, [Pool("tasks", 100, 1, ("task",))], context)


def outcome(call: Any) -> Any:
    """What a call gives: its result's identities and warnings, or its error."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = identities(call())
        except Exception as exc:  # noqa: BLE001 (the error is the outcome)
            return (type(exc), str(exc))
    return (result, [str(w.message) for w in seen])


ENTRY = {"type": "task", "content": "report"}


@pytest.mark.parametrize(
    ("entries", "pools", "context", "now"),
    [
        # a context key the default scorer never reads: one warning, not one
        # per round of the index
        ([ENTRY, dict(ENTRY)], [Pool("t", 10, 1)], {"mesage": "report"}, NOW),
        (  # the same over two rounds: the first one's pool is not full
            [
                {
                    "id": f"e{n}",
                    "type": "task",
                    "content": f"task {n}",
                    "base_priority": 5 - n / 100,
                    "token_count": 50 if n < 3 else 1,
                }
                for n in range(12)
            ],
            [Pool("tasks", 60, 2, ("task",))],
            {"message": "", "tag": ["api"]},
            NOW,
        ),
        ([ENTRY, ENTRY], [Pool("t", 10, 1)], {"message": "report"}, NOW),  # a repeat
        ([ENTRY], [Pool("t", 10, 1), Pool("t", 10, 1)], {}, NOW),  # duplicate names
        ([ENTRY], [Pool("t", 10, 1), "tasks"], {}, NOW),  # not a Pool
        ([ENTRY], [Pool("t", 10, 1)], {}, None),  # now: the clock
        ([ENTRY], [Pool("t", 10, 1)], {}, "2026-06-01"),  # not a datetime
        ([ENTRY], [Pool("t", 10, 1)], ["message"], NOW),  # not a Mapping
        ([ENTRY, ["not", "a", "dict"]], [Pool("t", 10, 1)], {}, NOW),
        (  # an always-scope entry whose type cannot be a set member
            [{"type": ["task"], "scope": "always", "content": "fix"}, ENTRY],
            [Pool("t", 10, 1, ("task",))],
            {},
            NOW,
        ),
    ],
)
def test_an_unusual_call_is_the_cores(
    entries: list[Any], pools: list[Any], context: Any, now: Any
) -> None:
    expected = outcome(
        lambda: poolsplit.retrieve_pools(entries, pools, context, now=now)
    )
    got = outcome(
        lambda: _index.Index(entries).recall(
            pools, context, now=now, token_counter=poolsplit.default_token_counter
        )
    )
    if now is None:  # the clock moved between the calls: compare the entries
        assert got[0] == expected[0]
    else:
        assert got == expected


def test_an_error_names_the_position_in_the_store() -> None:
    """A counter's error met in the subset is raised by the core on every
    entry, so it names the entry's position in the store."""
    entries = [
        {"id": f"e{n}", "type": "task", "content": f"task {n}", "base_priority": 5 - n}
        for n in range(12)
    ]
    entries[9]["base_priority"] = 100

    def counter(text: str) -> int:
        return 1.5 if text == "task 9" else 1  # type: ignore[return-value]

    pools = [Pool("tasks", 60, 2, ("task",))]
    with pytest.raises(poolsplit.EntryTypeError, match=r"entries\[9\] \(id='e9'\)"):
        _index.Index(entries).recall(
            pools, {"message": ""}, now=NOW, token_counter=counter
        )


@pytest.mark.parametrize(
    "priorities",
    [
        [-2] * 400,  # one tie of 400 (all past the horizon): too many
        [n / 7 for n in range(400)],  # a group per entry: too many groups
    ],
)
def test_a_shape_the_index_cannot_shrink_goes_to_the_core_at_once(
    monkeypatch: pytest.MonkeyPatch, priorities: list[float]
) -> None:
    monkeypatch.setattr(_subset, "_MAX_SHARE", 4)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 8)
    entries = [
        {"type": "task", "content": "x", "base_priority": p, "created": "2025-01-01"}
        for p in priorities
    ]
    sizes = core_calls(monkeypatch)
    check(entries, [Pool("tasks", 100, 3, ("task",))], {"message": "x"})
    assert sizes == [400]  # one call, on every entry


class _no_op:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_store_recall_uses_the_index_and_matches_the_core(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the store: the snapshot's first recall goes to the core on
    every row (the index is not built yet, issue 35: a first recall after
    opening does not wait for it); every later one asks the index, built
    once, at the second recall, and equal to the core on every row; a write
    adds its entry to the index, never rebuilds it (issue 26: it was rebuilt
    on the second recall of each version)."""
    lines = "".join(
        json.dumps(
            {
                "id": f"e{n}",
                "type": TYPES[n % len(TYPES)],
                "content": f"{WORDS[n % 7]} {WORDS[(n * 5) % 7]}",
                "created": (NOW - timedelta(days=n % 200, minutes=n)).isoformat(),
            }
        )
        + "\n"
        for n in range(400)
    )
    used: list[int] = []
    built: list[int] = []
    recall = _index.Index.recall
    build = _index.Index.__init__

    def counting(self: _index.Index, *args: Any, **kwargs: Any) -> Any:
        used.append(len(self.entries))
        return recall(self, *args, **kwargs)

    def building(self: _index.Index, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        build(self, *args, **kwargs)

    monkeypatch.setattr(_index.Index, "recall", counting)
    monkeypatch.setattr(_index.Index, "__init__", building)
    message = "deploy the search cache"
    rows = [json.loads(line) for line in lines.splitlines()]
    expected = poolsplit.retrieve_pools(
        rows,
        default_pools(TYPES),
        {"message": message, "tags": [], "project": None},
        now=NOW,
    )
    want = {name: [e["id"] for e in chosen] for name, chosen in expected.items()}
    with open_store(os.fspath(tmp_path / "m.db"), ranking="core") as store:
        store.import_jsonl(io.StringIO(lines))
        # every pool its own room: an index per pool's part, 80 entries each
        parts = len(TYPES)
        for turn in range(3):
            got = store.recall(message, now=NOW).ids()
            assert got == want
            assert used == [400 // parts] * parts * turn
            assert len(built) == min(turn, 1) * parts
        store.remember("a note", type="note")
        store.recall(message, now=NOW)
        assert sorted(used[-parts:]) == [80] * (parts - 1) + [81]
        assert len(built) == parts  # the write changed an index, never rebuilt it


# --- the lexical ranking through the index -------------------------------------
#
# The oracle: memory/README.md's "Ranking" formula, computed in full for every
# entry (Snowball's Porter stemmer, the README's word rule, statistics counted
# from scratch); nothing of _ranking's rules is imported.

_PORTER = snowballstemmer.stemmer("porter")
LEXICAL_WORDS = (*WORDS, "bills", "billed", "deploying", "reports", "searched")


def readme_terms(text: str) -> set[str]:
    words = set(re.findall(r"[a-z0-9]{3,}", text.lower())) - poolsplit.STOPWORDS
    return {_PORTER.stemWord(word) for word in words}


def readme_text(entry: dict[str, Any]) -> str:
    """The content the scorer reads (the core's README): missing or None is
    "", any other non-str its str()."""
    content = entry.get("content")
    return "" if content is None else str(content)


def readme_scorer(entries: list[dict[str, Any]], context: dict[str, Any]) -> Any:
    """score = base x g(r, best), r the BM25+ share (README), over ``entries``:
    g = 1 when best = 0, 0 when r < 0.2 x best, else exp(30 x r); the base
    leaves the entry's project out when the context names none."""
    docs = [readme_terms(readme_text(e)) for e in entries]
    count = len(docs)
    average = sum(len(d) for d in docs) / count if count else 0.0
    held = collections.Counter(t for d in docs for t in d)
    idf = {t: math.log(1 + (count - n + 0.5) / (n + 0.5)) for t, n in held.items()}
    known = [t for t in sorted(readme_terms(context["message"])) if t in held]
    total = sum(idf[t] for t in known)
    base_context = {k: v for k, v in context.items() if k != "message"}

    def share(entry: dict[str, Any]) -> float:
        own = readme_terms(readme_text(entry))
        shared = sum(idf[t] for t in known if t in own)
        if not shared:
            return 0.0
        length = 2.2 / (1 + 1.2 * (0.25 + 0.75 * len(own) / average))
        return shared * (length + 1) / (total * 3.2)

    best = max(map(share, entries), default=0.0)

    def score(entry: dict[str, Any], _context: Any, *, now: datetime) -> float:
        r = share(entry)
        factor = 1.0 if best == 0 else 0.0 if r < 0.2 * best or r == 0 else None
        if factor is None:
            factor = math.exp(30 * r)
        based = entry
        if context.get("project") is None:
            based = {k: v for k, v in entry.items() if k != "project"}
        # g = 0: not loaded, a score of 0 even for a base that overflowed
        base = poolsplit.default_scorer(based, base_context, now=now)
        return base * factor if factor else 0.0

    return score


lexical_entries_st = entries_st.flatmap(
    lambda entries: st.tuples(
        *[
            st.lists(st.sampled_from(LEXICAL_WORDS), max_size=5).map(
                lambda words, e=e: {**e, "content": " ".join(words)}
            )
            for e in entries
        ]
    ).map(list)
)
lexical_context_st = st.fixed_dictionaries(
    {
        "message": st.lists(
            st.sampled_from((*LEXICAL_WORDS, "the", "zebra")), max_size=4
        ).map(" ".join),
        "tags": st.lists(st.sampled_from(TAGS), max_size=2),
        "project": st.sampled_from([None, "shop", "blog"]),
    }
)


def lexical_index(
    entries: list[dict[str, Any]], removed: list[int]
) -> tuple[_index.Index, Statistics, list[dict[str, Any]]]:
    """An index and statistics kept as the snapshot keeps them: every entry
    added, the ``removed`` positions removed, then added again under new
    keys (their key order, what the core is given, is then the end)."""
    stats = Statistics()
    index = _index.Index(terms=stats.streams_of)
    for key, entry in enumerate(entries):
        stats.add(entry)
        index.add(key, entry)
    gone = sorted({i % len(entries) for i in removed}) if entries else []
    for key in gone:
        stats.remove(entries[key])
        index.remove(key)
    kept = [e for key, e in enumerate(entries) if key not in gone]
    back = [entries[key] for key in gone[::2]]
    for key, entry in enumerate(back, start=len(entries)):
        stats.add(entry)
        index.add(key, entry)
    return index, stats, kept + back


@settings(max_examples=400)
@given(lexical_entries_st, st.lists(st.integers(0, 59), max_size=8), pools_st,
       lexical_context_st)  # fmt: skip
@example(  # an entry sharing a rare term outranks a fresher one
    [
        {"type": "task", "content": "billing deploy", "created": "2025-01-01"},
        {"type": "task", "content": "deploy", "created": "2026-06-01T00:00:00Z"},
        {"type": "task", "content": "deploy search"},
    ],
    [],
    [(100, 1, ("task",), None)],
    {"message": "bills", "tags": [], "project": None},
)
@example(  # the one entry sharing both terms is owned by the rarer's stream
    [
        {"type": "task", "content": "billing deploy", "created": "2025-06-01"},
        *(
            {"type": "task", "content": f"deploy {word}", "created": "2026-05-30"}
            for word in ("search", "report", "fix", "notes", "alert")
        ),
        {"type": "task", "content": "billing invoice", "created": "2026-01-01"},
    ],
    [],
    [(100, 1, ("task",), None)],
    {"message": "billing deploy", "tags": [], "project": None},
)
@example(  # the stream (bill, 2) owns "billing invoice" (first in its
    # postings) and "billing deploy" (a factor 100 times larger): bounded by
    # the first, it fell below the high-priority "deploy report" and the
    # walk stopped there; its bound is the largest factor it owns
    [
        {"type": "task", "content": "billing invoice"},
        {"type": "task", "content": "deploy search"},
        {"type": "task", "content": "deploy report", "base_priority": 660000},
        {"type": "task", "content": "deploy rollback"},
        {"type": "task", "content": "billing deploy"},
    ],
    [],
    [(100, 1, ("task",), None)],
    {"message": "billing deploy", "tags": [], "project": None},
)
def test_property_lexical_recall_through_the_index_is_the_readme_full_scan(
    entries: list[dict[str, Any]],
    removed: list[int],
    pools: list[tuple[Any, ...]],
    context: dict[str, Any],
) -> None:
    """Issue 27: the index's walk, bounded by the relevance factors, gives
    what the core gives on every entry scored by the README's formula, with
    the statistics kept by adds and removes; the same warnings too."""
    index, stats, current = lexical_index(entries, removed)
    relevance = stats.relevance(context["message"])
    for chosen_pools in (named(pools), floored(named(pools), relevance)):
        check_lexical(index, stats, current, chosen_pools, context)


def check_lexical(
    index: _index.Index,
    stats: Statistics,
    current: list[dict[str, Any]],
    chosen_pools: list[Pool],
    context: dict[str, Any],
) -> None:
    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        expected = poolsplit.retrieve_pools(
            current,
            chosen_pools,
            context,
            scorer=readme_scorer(current, context),
            now=NOW,
        )
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = index.recall(
            chosen_pools,
            context,
            now=NOW,
            token_counter=poolsplit.default_token_counter,
            relevance=stats.relevance(context["message"]),
        )
    assert identities(got) == identities(expected)
    assert [str(w.message) for w in got_warnings] == [
        str(w.message) for w in expected_warnings
    ]


def test_lexical_recall_of_a_large_store_reads_a_small_subset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The point of walking the index with the relevance: at 5,000 entries
    the core is given a few dozen (only entries sharing a term of the
    message get a factor above 1), and the result is the full scan's."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 4)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 8)
    entries = [
        {
            "type": TYPES[n % len(TYPES)],
            "content": f"{LEXICAL_WORDS[n % 12]} {LEXICAL_WORDS[(n * 5) % 12]} {n}",
            "created": (NOW - timedelta(hours=5 * n)).isoformat(),
            "base_priority": n % 7,
        }
        for n in range(5000)
    ]
    index, stats, current = lexical_index(entries, [])
    sizes = core_calls(monkeypatch)
    whole: list[int] = []
    monkeypatch.setattr(
        _index.Index,
        "_whole",
        lambda *args: whole.append(1),  # never called
    )
    for message in ("billed the report", "searched", "zebra", "deploy 4321"):
        context = {"message": message, "tags": ["api"], "project": None}
        relevance = stats.relevance(message)
        pools = floored(default_pools(TYPES), relevance)  # as the store does
        expected = poolsplit.retrieve_pools(
            current, pools, context, scorer=readme_scorer(current, context), now=NOW
        )
        got = index.recall(
            pools,
            context,
            now=NOW,
            token_counter=poolsplit.default_token_counter,
            relevance=relevance,
        )
        assert identities(got) == identities(expected)
    assert not whole
    assert sizes and max(sizes) < 200


@settings(max_examples=300)
@given(lexical_entries_st, lexical_context_st, st.integers(-48, 24 * 400))
def test_lexical_bounds_are_never_below_the_score(
    entries: list[dict[str, Any]], context: dict[str, Any], hours: int
) -> None:
    """With the lexical relevance: an entry sharing no term scores its base
    (x tags) exactly; a boosted one's own bound, and the bound of the term
    stream that owns it (the base times that stream's factor and the largest
    tag boost), are at least its score by the README's formula. (A stream
    that does not own an entry may bound it lower: the walk reaches it by
    its own stream.)"""
    now = NOW + timedelta(hours=hours)
    index, stats, current = lexical_index(entries, [])
    relevance = stats.relevance(context["message"])
    call = index._call(context, now, relevance)
    assert call is not None
    score = readme_scorer(current, context)
    for key, entry in enumerate(current):
        if entry.get("scope") is not None:
            continue
        expected = score(entry, context, now=now)
        if key not in call.message_boosted:
            # its base (x tags) times the unmatched factor: 1, or 0 (floor)
            base = {k: v for k, v in context.items() if k != "message"}
            based = entry
            if context["project"] is None:
                based = {k: v for k, v in entry.items() if k != "project"}
            plain = poolsplit.default_scorer(based, base, now=now)
            assert expected == (plain if call.unmatched else 0.0)
            continue
        assert _index._widened(index._boosted_bound(key, call)) >= expected
        base = index._base(key, call) * (1 + poolsplit.TAG_BOOST)
        if base <= 0:
            continue  # a negative score: the base (x 1) bounds it
        assert _index._widened(base * call.message_factor) >= expected
        # Its (term, length) streams in this walk: the one that owns it
        # (Relevance.bounds) bounds it; the others may bound it lower.
        streams = [
            _index._widened(base * call.word_factor[name])
            for name in index._content_words[key]
            if name in call.word_factor
        ]
        assert streams and max(streams) >= expected


def test_a_content_that_is_not_a_string_is_scored_as_text_on_the_index(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: an imported ``"content": 4711`` is the text "4711" (the
    core's rule) for the relevance too, and keeps the namespace on the
    index: it got the factor of an entry sharing nothing (0, not loaded),
    and moved every recall of the namespace to the full scan. The store's
    recall is the README's formula on every row."""
    rows: list[dict[str, Any]] = [
        {
            "id": f"e{n}",
            "type": "note",
            "content": f"{WORDS[n % 7]} {WORDS[(n * 3) % 7]}",
            "created": (NOW - timedelta(days=n)).isoformat(),
        }
        for n in range(30)
    ]
    rows += [
        {"id": "number", "type": "note", "content": 4711, "created": "2026-01-01"},
        {"id": "float", "type": "note", "content": 2.5, "tags": ["api"]},
        {"id": "list", "type": "fact", "content": ["deploy", 4711]},
        {"id": "none", "type": "note", "content": None},
    ]
    whole: list[int] = []
    monkeypatch.setattr(_index.Index, "_whole", lambda *args: whole.append(1))
    pools = [Pool("facts", 10**6, 3, ("fact",)), Pool("notes", 10**6, 4, ("note",))]
    with open_store(os.fspath(tmp_path / "m.db"), pools=pools) as store:
        store.import_jsonl(io.StringIO("".join(json.dumps(r) + "\n" for r in rows)))
        for message in ("4711", "deploy 4711", "billing", "2.5 cache", "zebra"):
            context = {"message": message, "tags": ["api"], "project": None}
            got = store.recall(message, tags=["api"], now=NOW).ids()
            for pool in pools:  # each pool over its own entries (README)
                own = [r for r in rows if r["type"] in (pool.types or ())]
                matched = readme_terms(message) & {
                    t for r in own for t in readme_terms(readme_text(r))
                }
                floor = math.ulp(0.0) if matched else None
                expected = poolsplit.retrieve_pools(
                    own,
                    [dataclasses.replace(pool, min_score=floor)],
                    context,
                    scorer=readme_scorer(own, context),
                    now=NOW,
                )[pool.name]
                assert got[pool.name] == [e["id"] for e in expected]
        assert store.recall("4711", now=NOW).ids()["notes"] == ["number"]
    assert not whole  # every recall walked the index


@settings(max_examples=200)
@given(lexical_entries_st, lexical_context_st)
def test_a_walk_of_the_word_streams_alone_sees_the_same_boosted_entries(
    entries: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    """Walking the word streams alone (every pool floored), the call keeps
    the entries the message may boost as the word streams' own sets, not
    their union: membership, iteration, size and truth agree with the union
    a walk of every stream builds (the same call with a pool floored at 0)."""
    index, stats, _ = lexical_index(entries, [])
    relevance = stats.relevance(context["message"])
    pools = floored(named([(100, 3, None, None)]), relevance)
    alone = index._call(context, NOW, relevance, pools)
    every = index._call(context, NOW, relevance, named([(100, 3, None, 0.0)]))
    assert alone is not None and every is not None
    assert not every.words_only
    union = every.message_boosted
    assert isinstance(union, set)
    if alone.words_only:
        assert isinstance(alone.message_boosted, _index._Union)
    assert set(alone.message_boosted) == union
    assert len(alone.message_boosted) == len(union)
    assert bool(alone.message_boosted) == bool(union)
    for key in range(len(entries) + 2):
        assert (key in alone.message_boosted) == (key in union)


# Notes written hours to months apart, at the default priority: one group,
# whose word streams' bases differ by recency alone (langgraph_turn's shape).
aged_entries_st = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("note"),
            "content": st.lists(st.sampled_from(LEXICAL_WORDS), max_size=4).map(
                " ".join
            ),
            "created": st.integers(0, 24 * 120).map(
                lambda hours: (NOW - timedelta(hours=hours)).isoformat()
            ),
        }
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300)
@given(
    st.one_of(aged_entries_st, lexical_entries_st),
    st.one_of(
        st.integers(1, 5).map(lambda count: [(10**6, count, ("note",), None)]),
        pools_st,
    ),
    lexical_context_st,
    st.integers(0, 3),
    st.sampled_from([1, 4, 10**9]),
    st.sampled_from([0, 8]),
)
def test_a_walk_by_base_sorted_by_factor_at_any_point_is_the_readme_full_scan(
    entries: list[dict[str, Any]],
    pools: list[tuple[Any, ...]],
    context: dict[str, Any],
    first: int,
    rent: int,
    split_from: int,
) -> None:
    """A word stream whose bases differ, walked by base, is sorted by factor
    once it has given some of its entries (the base of its head bounding
    what is left); wherever that happens (forced here from the first entry
    on, as a real store's long streams do later), and whether the sort asks
    the relevance once an entry or once a part, the recall is the README's
    full scan."""
    index, stats, current = lexical_index(entries, [])
    relevance = stats.relevance(context["message"])
    saved = _index._BY_BASE_FIRST, _index._RENT, _index._SPLIT_FROM
    _index._BY_BASE_FIRST, _index._RENT, _index._SPLIT_FROM = first, rent, split_from
    try:
        check_lexical(index, stats, current, floored(named(pools), relevance), context)
    finally:
        _index._BY_BASE_FIRST, _index._RENT, _index._SPLIT_FROM = saved


@settings(max_examples=300)
@given(lexical_entries_st, lexical_context_st, st.lists(st.integers(0, 59)))
def test_the_shares_asked_once_a_part_are_each_entrys_share(
    entries: list[dict[str, Any]], context: dict[str, Any], removed: list[int]
) -> None:
    """The sort by factor asks ``share`` once per part of a stream's entries
    that hold the same of the message's terms: every entry of every word
    stream gets the share the relevance gives it on its own (README: ``r``
    depends on the content's length and the message's terms it holds)."""
    index, stats, _ = lexical_index(entries, removed)
    relevance = stats.relevance(context["message"])
    saved = _index._SPLIT_FROM
    _index._SPLIT_FROM = 0
    try:
        for name, by_group in index._words.items():
            for ranks in by_group.values():
                share = index._shares(name, ranks, relevance)
                for rank in ranks:
                    entry = index.entry(rank[-1])
                    assert share(rank[-1]) == relevance.share(entry)
    finally:
        _index._SPLIT_FROM = saved


@settings(max_examples=300)
@given(
    st.one_of(aged_entries_st, lexical_entries_st),
    lexical_context_st,
    st.integers(0, 60),
    st.integers(-48, 24 * 200),
)
@example(  # a head of negative base: its bound is no bound, but under the floor
    [
        {"type": "correction", "content": ""},
        {"type": "correction", "content": "billing", "base_priority": -2},
        {"type": "correction", "content": ""},
        {"type": "correction", "content": ""},
    ],
    {"message": "billing", "tags": ["api"], "project": None},
    0,
    0,
)
def test_a_stream_sorted_by_factor_mid_walk_bounds_every_entry_left(
    entries: list[dict[str, Any]], context: dict[str, Any], at: int, hours: int
) -> None:
    """A word stream walked by base, sorted by factor after ``at`` entries:
    it holds the entries it had left, best factor first, and the base of
    its head then (its ``top``) times each entry's factor (and the largest
    tag boost) is at least that entry's score by the README's formula."""
    now = NOW + timedelta(hours=hours)
    index, stats, current = lexical_index(entries, [])
    relevance = stats.relevance(context["message"])
    pools = floored(named([(100, 3, None, None)]), relevance)
    call = index._call(context, now, relevance, pools)
    assert call is not None
    if not call.words_only:
        return  # the walk by factor is a walk of the word streams alone's
    score = readme_scorer(current, context)
    tags = _index._MAX_TAGS if call.tags else 1.0
    for name, by_group in index._words.items():
        for group, ranks in by_group.items():
            stream = _index._Stream(ranks, 1.0, at=at % len(ranks), name=name)
            stream.by_base = True
            left = sorted(rank[-1] for rank in ranks[stream.at :])
            index._by_factor(stream, call)
            assert stream.by_factor and not stream.by_base and stream.at == 0
            assert sorted(rank[-1] for rank in stream.ranks) == left
            factors = [call.factor_of(rank[-1]) for rank in stream.ranks]
            assert factors == sorted(factors, reverse=True)
            assert stream.top is not None
            for rank, factor in zip(stream.ranks, factors):
                entry = index.entry(rank[-1])
                if stream.top <= 0.0:
                    # A head of base 0 or less is under every pool's floor (a
                    # words_only call's are above 0), and so is each entry
                    # left: no base left is above it, a product's sign is
                    # exact. _push then pushes nothing more of the stream.
                    assert _index._under(_index.weighed(stream.top, factor), 1e-300)
                    assert score(entry, context, now=now) <= 0.0
                    continue
                bound = _index._widened(_index.weighed(stream.top, factor * tags))
                assert bound >= score(entry, context, now=now)


# Memories written at one time, at the default priority: every word stream's
# bases tie (store_scale.py's shape), tags on some.
tied_entries_st = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(("note", "fact")),
            "content": st.lists(st.sampled_from(LEXICAL_WORDS), max_size=4).map(
                " ".join
            ),
            "created": st.just((NOW - timedelta(days=3)).isoformat()),
            "tags": st.lists(st.sampled_from(TAGS), max_size=2),
        }
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300)
@given(
    st.one_of(tied_entries_st, aged_entries_st, lexical_entries_st),
    lexical_context_st,
    st.integers(1, 12),
)
@example(  # a tag of the call: the untagged entry's own bound is lower
    [
        {"type": "note", "content": "billing", "created": "2026-05-29T00:00:00+00:00"},
        {
            "type": "note",
            "content": "billing",
            "created": "2026-05-29T00:00:00+00:00",
            "tags": ["api"],
        },
    ],
    {"message": "billing", "tags": ["api"], "project": None},
    1,
)
def test_an_entry_taken_at_its_streams_bound_is_what_pushing_it_back_takes(
    entries: list[dict[str, Any]], context: dict[str, Any], wanted: int
) -> None:
    """A stream walked by factor whose bases tie offers an entry at the bound
    of its own shares (no tags in the call): the walk takes it at once
    instead of pushing it back with that bound. Each pool's walk adds the
    same entries and returns the same threshold as the walk that pushes
    every offered entry back with ``_boosted_bound`` (the README's bound)."""
    index, stats, _ = lexical_index(entries, [])
    relevance = stats.relevance(context["message"])
    pools = floored(named([(100, 3, ("note",), None), (100, 2, None, None)]), relevance)
    walks = []
    for shortcut in (True, False):
        call = index._call(context, NOW, relevance, pools)
        assert call is not None
        taken = []
        by_factor = _index.Index._by_factor

        def sorted_by_factor(
            self: _index.Index, stream: Any, call: Any, shortcut: bool = shortcut
        ) -> None:
            by_factor(self, stream, call)
            stream.tied = stream.tied and shortcut

        _index.Index._by_factor = sorted_by_factor  # type: ignore[method-assign]
        try:
            for pool in pools:
                subset: set[int] = set()
                threshold = index._take(pool, wanted, call, subset, 10**9)
                taken.append((subset, threshold))
        finally:
            _index.Index._by_factor = by_factor  # type: ignore[method-assign]
        walks.append(taken)
    assert walks[0] == walks[1]
