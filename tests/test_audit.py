import json
import re
import warnings
from datetime import datetime

import pytest

from poolsplit import Audit, Pool, PoolsplitWarning, TypeAudit, audit, main

NOW = datetime(2026, 1, 1)


def test_hand_computed():
    store = [
        {
            "id": "c",
            "type": "correction",
            "scope": "always",
            "content": "x" * 40,
            "base_priority": 1,
        },
        {"id": "t", "type": "task", "content": "y" * 40, "base_priority": 9},
        {"id": "s", "type": "skill", "content": "z" * 20, "base_priority": 2},
        {"id": "off", "type": "skill", "scope": "always", "status": "old"},
        {"id": "n", "base_priority": 0},
    ]
    pools = [
        Pool("core", 0, 0, ["correction"]),
        Pool("work", 10, 1, ["task"]),
        Pool("skills", 10, 1, ["skill"]),
    ]
    result = audit(store, pools, [None, {"message": "zzz"}], now=NOW)
    # single budget: 20 tokens / 2 entries over t (10, score 9), s (5, 2), c (10, 1)
    assert result == Audit(
        2,
        (
            TypeAudit("correction", 2, 0, 20 / 50, 0.0),
            TypeAudit("note", 0, 0, 0.0, 0.0),
            TypeAudit("skill", 2, 2, 10 / 50, 10 / 30),
            TypeAudit("task", 2, 2, 20 / 50, 20 / 30),
        ),
        1,
        1,
        0,
        20,
        2,
    )
    assert result.to_dict()["types"][0]["type"] == "correction"
    assert result.render() == (
        "type        queries single  queries pools  share single  share pools\n"
        "correction  0/2             2/2            0.0%          40.0%\n"
        "note        0/2             0/2            0.0%          0.0%\n"
        "skill       2/2             2/2            33.3%         20.0%\n"
        "task        2/2             2/2            66.7%         40.0%\n"
        "\n"
        "single budget: 20 tokens / 2 entries (the pools' caps summed, "
        "always-scope ranked like the rest)\n"
        "always-scope entries loaded on every query: single 0/1, pools 1/1\n"
    )


def test_no_queries_and_custom_predicate():
    store = [{"id": "a", "scope": "always", "type": "x"}]
    result = audit(
        store, [Pool("p", 5, 1)], [], is_active=lambda e: e.get("id") == "a", now=NOW
    )
    assert result.queries == 0 and result.always_entries == 1
    assert result.always_every_pools == 1  # vacuously every query
    one = audit(
        store, [Pool("p", 5, 1)], [None], is_active=lambda e: "scope" not in e, now=NOW
    )
    # the predicate sees the original entry, scope included, in both runs
    assert one.always_entries == 0 and one.types[0].queries_single == 0


def test_view_hides_scope():
    seen = []
    store = [{"id": "a", "scope": "always", "k": 1}]

    def scorer(entry, context, *, now):
        seen.append((dict(entry), len(entry), "scope" in entry))
        with pytest.raises(KeyError):
            entry["scope"]
        return 1.0

    audit(store, [Pool("p", 5, 1)], [None], scorer=scorer, now=NOW)
    assert seen == [({"id": "a", "k": 1}, 2, False)]


def test_an_object_listed_twice_counts_once_in_both_modes():
    """Store [c, t, c]: audit said 'single 1/2, pools 1/2', and the single
    budget spent its room twice on c, starving t."""
    c = {"id": "c", "type": "correction", "scope": "always", "content": "x" * 40}
    c["base_priority"] = 9
    t = {"id": "t", "type": "task", "content": "y" * 40}
    pools = [Pool("core", 0, 0, ["correction"]), Pool("work", 20, 2, ["task"])]
    result = audit([c, t, c], pools, [None, None], now=NOW)
    assert result == Audit(
        2,
        (
            TypeAudit("correction", 2, 2, 0.5, 0.5),
            TypeAudit("task", 2, 2, 0.5, 0.5),
        ),
        1,
        1,
        1,
        20,
        2,
    )


def test_another_warning_is_issued_once_where_it_was_raised():
    def scorer(entry, context, *, now):
        warnings.warn("scorer says", UserWarning, stacklevel=1)
        return 1.0

    with pytest.warns(UserWarning) as caught:
        audit([{"id": "a"}], [Pool("p", 5, 1)], [None, {}, None], scorer=scorer)
    assert [str(w.message) for w in caught] == ["scorer says"]
    assert caught[0].filename == __file__


@pytest.mark.parametrize("contexts", [[], [None]])
@pytest.mark.parametrize(
    ("pools", "message"),
    [
        (5, "pools must be an iterable of Pool, got int"),
        (Pool("p", 1, 1), "pools must be an iterable of Pool, got a single Pool"),
        (["p"], "pools[0] must be a Pool, got str"),
    ],
)
def test_bad_pools_are_named_with_or_without_contexts(pools, message, contexts):
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        audit([{"id": "a"}], pools, contexts, now=NOW)


def test_bad_entries_are_named_with_or_without_contexts():
    with pytest.raises(TypeError, match="^entries must be an iterable of Mapping"):
        audit(5, [Pool("p", 1, 1)], [], now=NOW)
    with pytest.raises(TypeError, match=r"^entries\[1\] must be a Mapping, got int"):
        audit([{}, 3], [Pool("p", 1, 1)], [None], now=NOW)


def test_every_query_is_measured_at_one_moment():
    moments = []

    def scorer(entry, context, *, now):
        moments.append(now)
        return 1.0

    audit([{"id": "a"}], [Pool("p", 5, 1)], [None] * 3, scorer=scorer)
    assert len(moments) == 6 and len(set(moments)) == 1


# --- the single budget, warnings, bad contexts ---------------------------------


STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


def audit_one_entry(tmp_path, queries_text):
    """Run `poolsplit audit` on a one-entry store; assert it fails (exit 2)."""
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "a", "content": "x"}\n')
    queries = tmp_path / "q.jsonl"
    queries.write_text(queries_text)
    argv = ["audit", str(store), "--pools", write_pools(tmp_path)]
    assert main([*argv, "--queries", str(queries)]) == 2
    return queries


def write_pools(tmp_path, pools=None):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(pools or [{"name": "all", "max_tokens": 99, "max_entries": 9}])
    )
    return str(path)


def test_audit_reports_the_single_budget_it_compared():
    store = [{"id": "t", "type": "task", "content": "x"}]
    pools = [Pool("a", 30, 2, ("task",)), Pool("b", 12, 1)]
    result = audit(store, pools, [None], now=NOW)
    assert (result.single_tokens, result.single_entries) == (42, 3)
    assert (
        "single budget: 42 tokens / 3 entries (the pools' caps summed, "
        "always-scope ranked like the rest)\n"
    ) in result.render()


def test_audit_warns_once_per_call_at_the_callers_line():
    with pytest.warns(PoolsplitWarning) as caught:
        audit(STORE, [Pool("core", 0, 0, ("correction",))], [None] * 4, now=NOW)
    assert len(caught) == 1
    assert caught[0].filename == __file__


def test_audit_names_a_bad_context_by_position(tmp_path, capsys):
    with pytest.raises(TypeError, match=r"^contexts\[1\]: context\['tags'\] must be"):
        audit(STORE, [Pool("all", 9, 1)], [{}, {"tags": 5}], now=NOW)
    queries = audit_one_entry(tmp_path, '{"message": "a"}\n\n{"tags": 5}\n')
    assert capsys.readouterr().err == (
        f"poolsplit: error: {queries}:3: contexts[1]: context['tags'] must be a str "
        "or a list of str, got int\n"
    )


def test_audit_rejects_a_non_mapping_entry_without_queries():
    """2: audit(["x"], pools, []) raised AttributeError, not TypeError."""
    with pytest.raises(TypeError, match=r"^entries\[0\] must be a Mapping, got str$"):
        audit(["x"], [Pool("p", 1, 1)], [], now=NOW)
