import math

from poolsplit import Problem, validate


def test_clean_store():
    assert (
        validate([{"id": "a", "content": "x", "base_priority": 3, "tags": ["t"]}]) == []
    )


def test_every_problem():
    store = [
        "not a mapping",
        {
            "id": "a",
            "content": 5,
            "base_priority": "high",
            "created": "yesterday",
            "token_count": 0,
            "tags": {"x": 1},
            "scope": 1,
            "status": 2,
            "type": [],
        },
        {
            "id": "a",
            "content": "x",
            "base_priority": math.nan,
            "tags": ["ok", 3],
            "token_count": True,
            "superseded_by": "ghost",
        },
        {"id": ["h"], "content": "x", "superseded_by": ["u"]},
        {"content": "x", "superseded_by": "a", "tags": "one"},
        {"id": "b", "content": "x", "superseded_by": True},
    ]
    problems = validate(store)
    assert problems[0] == Problem(0, None, "error", "", "must be an object, got str")
    got = [(p.index, p.severity, p.field, p.message) for p in problems[1:]]
    assert got == [
        (1, "warning", "content", "content should be a str, got int"),
        (1, "error", "base_priority", "must be a real number, got str 'high'"),
        (
            1,
            "warning",
            "created",
            "cannot be read as a date, got 'yesterday'; it will not decay",
        ),
        (
            1,
            "warning",
            "token_count",
            "must be a positive int, got 0; the counter is used",
        ),
        (1, "error", "tags", "must be a str or a list of str, got dict"),
        (1, "warning", "scope", "should be a str, got int"),
        (1, "warning", "status", "should be a str, got int"),
        (1, "warning", "type", "should be a str, got list"),
        (2, "error", "base_priority", "must not be NaN, got nan"),
        (
            2,
            "warning",
            "token_count",
            "must be a positive int, got True; the counter is used",
        ),
        (2, "warning", "tags", "must contain only str; others compare as str()"),
        (2, "error", "id", "duplicate id 'a' (first at entries[1])"),
        (
            2,
            "error",
            "superseded_by",
            "is 'ghost', an id that is not in the store: this entry never "
            "loads, and nothing replaces it",
        ),
        (3, "error", "id", "must be hashable, got list"),
        (
            3,
            "error",
            "superseded_by",
            "is ['u'], an id that is not in the store: this entry never "
            "loads, and nothing replaces it",
        ),
    ]


def always(ident, tokens, **extra):
    return {"id": ident, "scope": "always", "content": "x" * (4 * tokens), **extra}


def test_always_scope_total_at_the_limit_is_clean():
    store = [always("a", 2000), always("b", 2000)]
    assert validate(store) == []


def test_always_scope_total_past_the_limit_warns_where_it_crosses():
    store = [
        always("a", 3000),
        always("off", 5000, status="archived"),  # inactive: not counted
        {"id": "ctx", "content": "x" * 40000},  # context scope: not counted
        always("b", 500, token_count=1001),  # token_count is the cost
        always("c", 10),
    ]
    assert validate(store) == [
        Problem(
            3,
            "b",
            "warning",
            "scope",
            "active always-scope entries cost 4011 tokens in all (3 entries; "
            "the total passes 4000 here); no cap limits them, so check who may "
            "write scope='always'",
        )
    ]


def test_always_scope_total_skips_entries_retrieval_rejects():
    class Unprintable:
        def __str__(self):
            raise ValueError("no text")

    store = [
        always("a", 4000),
        {"id": "u", "scope": "always", "content": Unprintable()},
    ]
    assert [p.field for p in validate(store)] == ["content"]
