"""Scale and pathological shapes at small-but-meaningful sizes.

benchmarks/stress.py runs the big ones (1,000,000 entries, 10 MB content,
10,000 pools) with figures; these keep the shapes in the default suite.
"""

import json
import math

import pytest
from conftest import NOW

from poolsplit import Pool, explain, main, retrieve, retrieve_pools, validate


def store(n, always_every=0):
    return [
        {
            "id": f"e{i}",
            "type": ("task", "fact", "skill")[i % 3],
            "content": f"deploy cluster item{i}",
            "base_priority": i % 10,
            **({"scope": "always"} if always_every and i % always_every == 0 else {}),
        }
        for i in range(n)
    ]


class CountingEntry(dict):
    """A dict entry that counts every field read, shared across a store."""

    reads = 0

    def get(self, key, default=None):
        CountingEntry.reads += 1
        return super().get(key, default)

    def __getitem__(self, key):
        CountingEntry.reads += 1
        return super().__getitem__(key)


def reads_for(entries, pools):
    """Field reads of one warm call: counted, not timed."""
    counted = [CountingEntry(entry) for entry in entries]
    retrieve_pools(counted, pools, {"message": "deploy"}, now=NOW)  # warm caches
    CountingEntry.reads = 0
    retrieve_pools(counted, pools, {"message": "deploy"}, now=NOW)
    return CountingEntry.reads


def test_work_grows_linearly_with_entries():
    """Ten times the entries costs about ten times the field reads: no n**2
    path. Counted rather than timed, so a loaded machine cannot fail it."""
    pools = [Pool("a", 50, 3, ("task",)), Pool("b", 50, 3)]
    small = reads_for(store(2_000), pools)
    large = reads_for(store(20_000), pools)
    assert small > 2_000
    assert large <= 11 * small, (small, large)  # quadratic would be ~100


def test_many_always_scope_entries_all_load():
    data = store(5_000, always_every=1)
    got = retrieve(data, Pool("p", 0, 0), now=NOW)
    assert len(got) == 5_000 and all(a is b for a, b in zip(got, data))
    report = explain(data, [Pool("p", 10, 1)], now=NOW)
    assert report.pools[0].always_count == 5_000


def test_one_large_content_entry():
    big = {"id": "big", "content": "deploy " * 150_000}  # about 1 MB
    got = retrieve([big], Pool("p", 10**6, 1), {"message": "deploy it"}, now=NOW)
    assert got == [big]


def test_many_pools():
    data = store(3_000)
    for i, entry in enumerate(data):
        entry["type"] = f"t{i % 1_000}"
    pools = [Pool(f"p{i}", 100, 2, (f"t{i}",)) for i in range(1_000)]
    result = retrieve_pools(data, pools, now=NOW)
    assert len(result) == 1_000
    assert all(len(chosen) == 2 for chosen in result.values())


@pytest.mark.parametrize(
    "value", [1e308, -1e308, float("inf"), -float("inf"), 10**300, -(10**300), 0]
)
def test_extreme_numbers_in_every_float_range_field(value):
    """Within the float range every numeric field works; 10**400 is a known bug
    kept in test_huge_numbers.py."""
    data = [
        {"id": value, "base_priority": value, "created": value, "content": "x"},
        {"id": "b", "token_count": 10**18, "scope": "always"},
        {"id": "c", "token_count": -(10**18)},
    ]
    pools = [Pool("p", 10**18, 10**9)]

    def scorer(entry, context, *, now):
        return value

    got = retrieve_pools(data, pools, now=NOW)["p"]
    assert {id(e) for e in got} == {id(e) for e in data}
    explain(data, pools, now=NOW, scorer=scorer).render()
    validate(data)


def run_cli(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def pools_path(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps([{"name": "p", "max_tokens": 50, "max_entries": 3}]))
    return str(path)


def write_nested(tmp_path, depth, layout):
    nested = "[" * depth + "]" * depth
    store_path = tmp_path / "store.json"
    if layout == "lines":
        store_path.write_text('{"id": "a"}\n{"content": ' + nested + "}\n")
    elif layout == "array":
        store_path.write_text('[{"id": "a"}, {"content": ' + nested + "}]")
    else:
        store_path.write_text('{"id": "a"}\n')
        (tmp_path / "pools.json").write_text(nested)
    return store_path


@pytest.mark.parametrize("depth", [100_000, 1_000_000])
@pytest.mark.parametrize("layout", ["lines", "array", "pools"])
def test_cli_deeply_nested_json_is_a_one_line_error(
    tmp_path, capsys, pools_path, depth, layout
):
    store_path = write_nested(tmp_path, depth, layout)
    status, out, err = run_cli(
        ["retrieve", str(store_path), "--pools", pools_path], capsys
    )
    assert (status, out) == (2, "")
    assert err.startswith("poolsplit: error: ") and err.count("\n") == 1
    assert "nested too deeply" in err
    line = 1 if layout != "lines" else 2
    assert f":{line}: invalid JSON" in err


@pytest.mark.parametrize("layout", ["lines", "array", "pools"])
def test_cli_moderate_nesting_parses_or_fails_in_one_line(
    tmp_path, capsys, pools_path, layout
):
    # Whether 1,000 levels parse depends on the interpreter's C stack limit
    # (3.11 refuses, 3.12 and later accept): either outcome is clean.
    store_path = write_nested(tmp_path, 1_000, layout)
    status, out, err = run_cli(
        ["retrieve", str(store_path), "--pools", pools_path], capsys
    )
    if status == 0:
        assert out.startswith("## p\n") and err == ""
    else:
        assert (status, out) == (2, "")
        assert err.startswith("poolsplit: error: ") and err.count("\n") == 1


def test_cli_very_long_json_line(tmp_path, capsys, pools_path):
    """One 1.5 MB line: a store as one JSON array, and one broken at the end."""
    text = json.dumps(store(20_000))
    store_path = tmp_path / "store.json"
    store_path.write_text(text)
    status, out, err = run_cli(
        ["retrieve", str(store_path), "--pools", pools_path, "--now", "2026-01-01"],
        capsys,
    )
    assert (status, err) == (0, "") and out.startswith("## p\n")
    store_path.write_text(text[:-1])  # drop the closing bracket
    status, out, err = run_cli(
        ["retrieve", str(store_path), "--pools", pools_path], capsys
    )
    assert (status, out) == (2, "")
    assert err.startswith(f"poolsplit: error: {store_path}:1: invalid JSON: ")
    assert err.count("\n") == 1


# --- stores large enough to sort in two parts ----------------------------------


def ids(entries):
    return [entry["id"] for entry in entries]


def test_large_store_of_negative_scores_agrees_with_the_oracle():
    """walk 30: above 16,384 ranked entries, a negative base score times the
    message factor falls below the sample's cutoff (-1 x 2.5 = -2.5), so the
    entries kept aside (-2, no match) must be sorted in before the heap's
    best goes out: they rank first."""
    from oracle import oracle_retrieve

    store = [
        {"id": f"top{i:05d}", "base_priority": -1, "content": "deploy cluster"}
        for i in range(2_500)
    ] + [
        {"id": f"low{i:05d}", "base_priority": -2, "content": "other words"}
        for i in range(14_500)
    ]
    pool = Pool("p", 10**6, 10)
    context = {"message": "deploy cluster"}
    got = retrieve(store, pool, context, now=NOW)
    assert ids(got) == ids(oracle_retrieve(store, pool, context, now=NOW))
    assert ids(got)[0] == "low00000"


def test_a_one_ulp_tie_below_the_sort_cut_is_broken_by_id():
    """Above 16,384 ranked entries the engine sorts only those at or above a
    sample's cutoff, here x (the 157th of the 1,250 sampled bases). y, one
    ulp below x, is kept aside; times the message factor 2.5 both round to
    the same score, so y (id "a") must be sorted in and tie with x (id "b")
    before the heap's best goes out: it wins the tie by id."""
    from oracle import oracle_retrieve

    x = float.fromhex("0x1.c000000000002p+2")  # 7.000...; x * 2.5 == y * 2.5
    y = math.nextafter(x, 0)
    assert y < x and x * 2.5 == y * 2.5
    store = []
    for i in range(20_000):
        if i == 16 * 156:
            entry = {"id": "b", "base_priority": x, "content": "deploy cluster"}
        elif i == 1:
            entry = {"id": "a", "base_priority": y, "content": "deploy cluster"}
        elif i % 16 == 0 and i < 16 * 156:
            entry = {"id": f"h{i}", "base_priority": 10, "content": "other"}
        else:
            entry = {"id": f"l{i}", "base_priority": 1, "content": "other"}
        store.append(entry)
    pool = Pool("p", 10**6, 1)
    context = {"message": "deploy cluster"}
    got = retrieve(store, pool, context, now=NOW)
    assert ids(got) == ["a"]
    assert ids(got) == ids(oracle_retrieve(store, pool, context, now=NOW))
