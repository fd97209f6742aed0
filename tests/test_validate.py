import math
from datetime import datetime, timedelta, timezone

import pytest

from poolsplit import Pool, Problem, retrieve, validate


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
    got = [(p.severity, p.field) for p in validate(store)]
    assert got == [("warning", "content"), ("error", "content")]  # no total


# --- the usual mistakes (issue 21) ----------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def key_warnings(entry):
    return [(p.field, p.message) for p in validate([entry], now=NOW)]


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("priority", "base_priority"),
        ("Priority", "base_priority"),
        ("timestamp", "created"),
        ("created_at", "created"),
        ("createdAt", "created"),
        ("created-on", "created"),
        ("date", "created"),
        ("tokens", "token_count"),
        ("text", "content"),
        ("body", "content"),
        ("tpye", "type"),  # two neighbouring letters swapped
        ("socpe", "scope"),
        ("scop", "scope"),  # the near-miss ratio, as before
    ],
)
def test_a_likely_meant_key_is_named(key, meant):
    entry = {"id": "e", "content": "x", key: 1}
    assert key_warnings(entry) == [
        (
            key,
            f"unknown key {key!r}, probably {meant!r}; poolsplit reads only "
            f"{meant!r}, so this value is ignored",
        )
    ]


@pytest.mark.parametrize("key", ["source", "trust", "score", "yept", "typo", "owner"])
def test_the_callers_own_keys_pass(key):
    assert key_warnings({"id": "e", "content": "x", key: 1}) == []


def test_a_type_differing_only_by_case_or_spacing_is_named():
    store = [
        {"id": "c1", "type": "correction", "content": "x"},
        {"id": "c2", "type": "Correction", "content": "x"},
        {"id": "c3", "type": "correction", "content": "x"},
        {"id": "c4", "type": " correction ", "content": "x"},
        {"id": "t1", "type": "task list", "content": "x"},
        {"id": "t2", "type": "tasklist", "content": "x"},
        {"id": "f1", "type": "fact", "content": "x"},
    ]
    got = [(p.index, p.severity, p.field, p.message) for p in validate(store, now=NOW)]
    assert got == [
        (
            1,
            "warning",
            "type",
            "is 'Correction', and 2 entries have type 'correction': they differ "
            "only by case or spacing, and a pool admits each spelling separately",
        ),
        (
            3,
            "warning",
            "type",
            "is ' correction ', and 2 entries have type 'correction': they differ "
            "only by case or spacing, and a pool admits each spelling separately",
        ),
        (
            5,
            "warning",
            "type",
            "is 'tasklist', and 1 entries have type 'task list': they differ "
            "only by case or spacing, and a pool admits each spelling separately",
        ),
    ]


def test_one_spelling_per_type_is_clean():
    store = [{"id": i, "type": t, "content": "x"} for i, t in enumerate("aabB")][:3]
    assert validate(store, now=NOW) == []


def test_a_project_that_is_not_a_str_is_named():
    assert key_warnings({"id": "e", "content": "x", "project": ["webshop"]}) == [
        (
            "project",
            "should be a str or None, got list ['webshop']; it is compared with "
            "the context's project as it is, so it never matches a str project "
            "and scores the 0.5 mismatch factor",
        )
    ]
    assert key_warnings({"id": "e", "content": "x", "project": "webshop"}) == []


def test_a_created_in_milliseconds_is_named_with_the_hint():
    entry = {"id": "e", "content": "x", "created": 1700000000000}
    [(field, message)] = key_warnings(entry)
    assert field == "created"
    assert message.startswith("is 1700000000000, ")
    assert message.endswith(
        " days after the moment validated against; a future created counts as "
        "fresh until then; if it is in milliseconds, divide it by 1000"
    )


def test_a_created_more_than_a_day_ahead_is_named_and_a_day_is_not():
    day = 86400
    base = NOW.timestamp()
    assert key_warnings({"id": "e", "content": "x", "created": base + day}) == []
    assert key_warnings({"id": "e", "content": "x", "created": "2026-01-02"}) == []
    assert key_warnings({"id": "e", "content": "x", "created": "2026-01-03"}) == [
        (
            "created",
            "is '2026-01-03', 2 days after the moment validated against; a "
            "future created counts as fresh until then",
        )
    ]
    late = key_warnings({"id": "e", "content": "x", "created": base + day + 1})
    assert late[0][1].endswith("if it is in milliseconds, divide it by 1000")


def test_validate_measures_the_future_from_the_current_time_by_default():
    ahead = datetime.now(timezone.utc) + timedelta(days=3)
    [problem] = validate([{"id": "e", "content": "x", "created": ahead}])
    assert problem.field == "created"
    with pytest.raises(TypeError, match="^now must be a datetime or None, got str$"):
        validate([], now="2026-01-01")


# --- near misses, superseded_by, token_count -----------------------------------


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (
            {"status": "Active"},
            "status",
            "is 'Active', not exactly 'active': the entry is inactive and will "
            "never load",
        ),
        (
            {"status": " active "},
            "status",
            "is ' active ', not exactly 'active': the entry is inactive and will "
            "never load",
        ),
        (
            {"scope": "ALWAYS"},
            "scope",
            "is 'ALWAYS', not exactly 'always': the entry competes for room instead of "
            "loading unconditionally",
        ),
    ],
)
def test_validate_near_miss_status_and_scope_are_errors(entry, field, message):
    problems = validate([{"id": "a", "content": "x", **entry}])
    assert [(p.severity, p.field, p.message) for p in problems] == [
        ("error", field, message)
    ]


@pytest.mark.parametrize(
    ("key", "likely"),
    [
        ("scop", "scope"),
        ("stauts", "status"),
        ("token_cont", "token_count"),
        ("created_at", "created"),
        ("Scope", "scope"),
        ("TAGS", "tags"),
    ],
)
def test_validate_near_miss_keys_warn(key, likely):
    problems = validate([{"id": "a", "content": "x", key: "always"}])
    assert [(p.severity, p.field, p.message) for p in problems] == [
        (
            "warning",
            key,
            f"unknown key {key!r}, probably {likely!r}; poolsplit reads "
            f"only {likely!r}, so this value is ignored",
        )
    ]


@pytest.mark.parametrize("key", ["score", "source", "trust", "expires_at", "user", 3])
def test_validate_other_extra_keys_are_the_users_own(key):
    assert validate([{"id": "a", "content": "x", key: 1}]) == []


@pytest.mark.parametrize("falsy", ["", 0, [], {}, False])
def test_validate_a_falsy_superseded_by_retires_nothing(falsy):
    entry = {"id": "a", "content": "x", "superseded_by": falsy}
    assert validate([entry]) == []
    assert retrieve([entry], Pool("p", 9, 1), now=NOW) == [entry]


def test_validate_an_entry_superseded_by_itself_is_lost():
    problems = validate([{"id": "e", "content": "x", "superseded_by": "e"}])
    assert [(p.severity, p.message) for p in problems] == [
        ("error", "is 'e', its own id: this entry never loads, and nothing replaces it")
    ]


def test_validate_and_retrieval_agree_on_an_int_subclass_token_count():
    """3: validate warned "must be a positive int, got 3" for a cost retrieval used."""

    class Count(int):
        pass

    entry = {"id": "a", "content": "x" * 400, "token_count": Count(3)}
    assert validate([entry]) == []
    assert [e["id"] for e in retrieve([entry], Pool("p", 3, 1), now=NOW)] == ["a"]
