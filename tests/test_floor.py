"""Pool(min_score=...): the relevance floor of a pool."""

import json
import math
from datetime import datetime, timezone

import pytest

from poolsplit import Pool, explain, main, retrieve, retrieve_pools

# --- min_score -----------------------------------------------------------------


NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def by_score(scores, **extra):
    """Entries whose default score is their base_priority (fresh, no tags)."""
    return [
        {"id": f"e{i}", "base_priority": score, "content": "x", **extra}
        for i, score in enumerate(scores)
    ]


def ids(entries):
    return [e["id"] for e in entries]


@pytest.mark.parametrize(
    ("floor", "expected"),
    [
        (None, ["e0", "e1", "e2", "e3"]),
        (-math.inf, ["e0", "e1", "e2", "e3"]),
        (2, ["e0", "e1", "e2"]),  # a score exactly at the floor is taken
        (2.0000001, ["e0", "e1"]),
        (3, ["e0", "e1"]),
        (9, []),
        (math.inf, []),
    ],
)
def test_floor_takes_scores_at_or_above_it(floor, expected):
    store = by_score([4, 3, 2, 1])
    got = retrieve(store, Pool("p", 100, 10, min_score=floor), now=NOW)
    assert ids(got) == expected


def test_minus_infinity_score_is_below_any_finite_floor():
    store = [{"id": "a"}, {"id": "b"}]

    def scorer(entry, context, *, now):
        return -math.inf if entry["id"] == "a" else 0.0

    got = retrieve(store, Pool("p", 100, 5, min_score=-1e300), scorer=scorer, now=NOW)
    assert ids(got) == ["b"]
    unfloored = retrieve(store, Pool("p", 100, 5), scorer=scorer, now=NOW)
    assert ids(unfloored) == ["b", "a"]  # without a floor even -inf is taken


def test_floor_leaves_the_entry_to_the_next_pool():
    store = by_score([1, 9], type="task")
    pools = [
        Pool("strict", 100, 5, ("task",), min_score=5),
        Pool("rest", 100, 5),
    ]
    got = retrieve_pools(store, pools, now=NOW)
    assert {name: ids(chosen) for name, chosen in got.items()} == {
        "strict": ["e1"],
        "rest": ["e0"],
    }


def test_always_scope_ignores_the_floor():
    store = [{"id": "c", "scope": "always", "base_priority": 0}, *by_score([1])]
    got = retrieve(store, Pool("p", 100, 5, min_score=3), now=NOW)
    assert ids(got) == ["c"]


def test_floor_none_is_the_default_and_changes_nothing():
    store = by_score([5, 0, -2, 7])
    plain = retrieve(store, Pool("p", 100, 3), now=NOW)
    explicit = retrieve(store, Pool("p", 100, 3, min_score=None), now=NOW)
    assert ids(plain) == ids(explicit) == ["e3", "e0", "e1"]


@pytest.mark.parametrize(
    ("floor", "error", "message"),
    [
        (True, TypeError, "min_score must be a real number or None, got bool"),
        ("3", TypeError, "min_score must be a real number or None, got str"),
        (math.nan, ValueError, "min_score must not be NaN, got nan"),
    ],
)
def test_bad_floor(floor, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        Pool("p", 1, 1, min_score=floor)


def test_floor_accepts_ints_fractions_and_infinities():
    from fractions import Fraction

    for floor in (3, 2.5, Fraction(1, 3), math.inf, -math.inf):
        assert Pool("p", 1, 1, min_score=floor).min_score == floor


def test_explain_reports_below_floor_with_score_and_floor():
    store = by_score([9, 1], type="task")
    pools = [Pool("strict", 100, 5, ("task",), min_score=5.5)]
    report = explain(store, pools, now=NOW)
    low = report.decisions[1]
    assert (low.outcome, low.pool, low.reason, low.score) == (
        "below_floor",
        "strict",
        "min_score 5.5",
        1.0,
    )
    assert report.pools[0].below_floor == 1 and report.pools[0].left_out == 0
    assert report.warnings == ()  # a floor that excludes is not a misconfiguration
    text = report.render()
    assert "below_floor:min_score 5.5  strict  1.000" in text
    assert "pool strict: tokens 1/100, entries 1/5, left out 0, below floor 1" in text
    assert report.selected() == retrieve_pools(store, pools, now=NOW)


def test_explain_floor_then_taken_by_a_later_pool():
    store = by_score([1], type="task")
    pools = [Pool("strict", 100, 5, min_score=5), Pool("rest", 100, 5)]
    decision = explain(store, pools, now=NOW).decisions[0]
    assert (decision.outcome, decision.pool) == ("selected", "rest")


def test_cli_pools_file_accepts_min_score(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text(
        '{"id": "hi", "content": "a", "base_priority": 9}\n'
        '{"id": "lo", "content": "b", "base_priority": 1}\n'
    )
    pools = tmp_path / "p.json"
    pools.write_text(
        json.dumps([{"name": "p", "max_tokens": 9, "max_entries": 9, "min_score": 5}])
    )
    args = ["retrieve", str(store), "--pools", str(pools), "--now", "2026-01-01"]
    assert main([*args, "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["p"]] == ["hi"]
