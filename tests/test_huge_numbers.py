"""Integers past the float range, as JSON allows: read as +-inf where a float
is meant, exact where an int is (found by the fuzzers, fuzz/).
"""

from conftest import NOW

from poolsplit import Pool, explain, retrieve, retrieve_pools, validate

# --- huge ints in every field --------------------------------------------------


HUGE = 10**400  # JSON allows it; float(HUGE) raises OverflowError


def test_huge_int_base_priority_ranks_like_infinity():
    """fuzz_retrieve crash-3306977: a 400-digit base_priority crashed validate."""
    store = [{"id": "b"}, {"id": "a", "base_priority": HUGE}]
    got = retrieve(store, Pool("p", 100, 2), now=NOW)
    assert [e["id"] for e in got] == ["a", "b"]


def test_huge_negative_int_base_priority_ranks_last():
    store = [{"id": "a", "base_priority": -HUGE}, {"id": "b"}]
    got = retrieve(store, Pool("p", 100, 2), now=NOW)
    assert [e["id"] for e in got] == ["b", "a"]


def test_validate_accepts_huge_int_priority():
    """The crashing input from fuzz_retrieve, as decoded by the target."""
    store = [{}, {"base_priority": -(10**399) * 1273, "status": None}, {}, {}]
    assert all(p.field == "content" for p in validate(store))


def test_huge_int_created_means_no_decay():
    """Like ``created: 1e999`` (inf), an instant beyond the float range."""
    store = [{"id": "a", "created": HUGE}, {"id": "b", "created": 1e999}]
    # Both unreadable: equal scores and equal created keys, so the id decides.
    got = retrieve(store, Pool("p", 100, 2), now=NOW)
    assert [e["id"] for e in got] == ["a", "b"]
    got = retrieve(store[::-1], Pool("p", 100, 2), now=NOW)
    assert [e["id"] for e in got] == ["a", "b"]
    assert [p.field for p in validate(store)] == ["content", "created"] * 2


def test_huge_int_id_sorts_with_the_numbers():
    store = [{"id": HUGE}, {"id": 1}, {"id": "z"}]
    got = retrieve(store, Pool("p", 100, 3), now=NOW)
    assert [e["id"] for e in got] == ["z", 1, HUGE]


def test_scorer_returning_huge_int_counts_as_infinity():
    def scorer(entry, context, *, now):
        return HUGE if entry["id"] == "b" else 1.0

    store = [{"id": "a"}, {"id": "b"}]
    got = retrieve_pools(store, [Pool("p", 100, 1)], scorer=scorer, now=NOW)
    assert [e["id"] for e in got["p"]] == ["b"]


def test_explain_with_huge_numbers_in_every_field():
    store = [
        {
            "id": HUGE,
            "base_priority": HUGE,
            "created": -HUGE,
            "token_count": HUGE,
            "content": "x",
        },
        {"id": "a", "scope": "always", "token_count": HUGE},
    ]
    report = explain(store, [Pool("p", HUGE, HUGE)], now=NOW)
    assert [d.outcome for d in report.decisions] == ["selected", "always"]


def test_huge_token_count_and_caps_are_exact_ints():
    """Costs and caps stay Python ints: no float rounding at 10**400."""
    store = [{"id": "a", "token_count": HUGE}, {"id": "b", "token_count": HUGE + 1}]
    got = retrieve(store, Pool("p", HUGE, 5), now=NOW)
    assert [e["id"] for e in got] == ["a"]
