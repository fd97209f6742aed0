"""The caches: bounded in bytes, never a change of result, nothing kept past
the budget once a store is dropped (tracemalloc)."""

from __future__ import annotations

import gc
import random
import tracemalloc

import pytest
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st

import poolsplit
from poolsplit import (
    DEFAULT_CACHE_BUDGET,
    Pool,
    clear_caches,
    explain,
    retrieve_pools,
    set_cache_budget,
)


@pytest.fixture
def budget():
    """Restore the default budget and empty caches after the test."""
    old = set_cache_budget(DEFAULT_CACHE_BUDGET)
    clear_caches()
    yield set_cache_budget
    set_cache_budget(old)
    clear_caches()


def vocabulary(rng, size=3000):
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(size)]


def episodes(count, chars, seed=1):
    """``count`` episodes of about ``chars`` characters of words, no priority
    and no created, so every one is scored in full on every call."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    store = []
    for i in range(count):
        text = []
        length = 0
        while length < chars:
            word = rng.choice(words)
            text.append(word)
            length += len(word) + 1
        store.append(
            {
                "id": f"ep{i:05d}",
                "type": "episode",
                "content": " ".join(text),
                "created": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00Z",
            }
        )
    return store


def retained_after_dropping(count, chars):
    """Bytes still allocated once a store built, scored and explained under
    tracemalloc is dropped with its results: what the caches keep."""
    gc.collect()
    tracemalloc.start()
    try:
        store = episodes(count, chars)
        pools = [Pool("story", 4000, 5, types=["episode"])]
        context = {"message": store[0]["content"][:60]}
        result = retrieve_pools(store, pools, context, now=NOW)
        report = explain(store, pools, context, now=NOW)
        assert report.selected() == result
        del store, result, report
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_a_dropped_40_mb_store_leaves_at_most_the_budget(budget):
    """2,000 episodes of 20 KB (40 MB of content): once the store is dropped,
    what stays allocated is within a 4 MB budget."""
    budget(4 * 1024 * 1024)
    retained = retained_after_dropping(2_000, 20_000)
    assert retained <= 4 * 1024 * 1024, retained


def test_within_the_budget_the_caches_keep_what_they_split(budget):
    """The measure above sees the caches: under a large budget, 200 episodes
    of 20 KB stay held (content strings and their words) after the drop."""
    budget(64 * 1024 * 1024)
    retained = retained_after_dropping(200, 20_000)
    assert retained >= 200 * 20_000, retained


def test_set_cache_budget_returns_the_old_budget_and_shrinks_at_once(budget):
    assert budget(1_000_000) == DEFAULT_CACHE_BUDGET
    store = episodes(50, 2_000)
    retrieve_pools(store, [Pool("p", 1000, 3)], {"message": "hello"}, now=NOW)
    held = poolsplit._contents.held
    assert 0 < held <= 750_000  # its share: three quarters
    assert budget(100_000) == 1_000_000
    assert poolsplit._contents.held <= 75_000
    assert budget(0) == 100_000
    assert all(not cache.data and cache.held == 0 for cache in poolsplit._CACHES)


def test_a_budget_of_zero_keeps_nothing_and_changes_no_result(budget):
    store = episodes(60, 500)
    store[7]["base_priority"] = 9
    pools = [Pool("a", 300, 2), Pool("b", 3000, 4)]
    context = {"message": " ".join(store[3]["content"].split()[:3])}
    expected = retrieve_pools(store, pools, context, now=NOW)
    budget(0)
    clear_caches()
    assert retrieve_pools(store, pools, context, now=NOW) == expected
    assert all(not cache.data for cache in poolsplit._CACHES)


def test_an_item_larger_than_its_share_is_not_kept(budget):
    budget(40_000)  # content share: 30,000 bytes
    words = poolsplit._content_words("alpha " * 10_000)
    assert words == ("alpha",)
    assert not poolsplit._contents.data
    poolsplit._content_words("alpha beta")
    assert list(poolsplit._contents.data) == ["alpha beta"]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-1, ValueError, "max_bytes must be >= 0, got -1"),
        (1.5, TypeError, "max_bytes must be an int, got float"),
        (True, TypeError, "max_bytes must be an int, got bool"),
        ("64MB", TypeError, "max_bytes must be an int, got str"),
    ],
)
def test_a_bad_budget_is_an_error(budget, value, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        budget(value)
    assert budget(DEFAULT_CACHE_BUDGET) == DEFAULT_CACHE_BUDGET


texts = st.text(alphabet="ab cd", min_size=0, max_size=40)


@given(st.lists(texts, max_size=60), st.integers(0, 6000))
def test_held_bytes_are_the_sum_of_the_items_and_within_the_share(items, limit):
    """After any sequence of insertions, each cache's count of bytes is the
    sum of its items' sizes and at most its share of the budget."""
    old = set_cache_budget(limit)
    try:
        clear_caches()
        for text in items:
            poolsplit._content_words(text)
            poolsplit._message_words(text)
            poolsplit._parse_iso(text)
        for cache in poolsplit._CACHES:
            sizes = sum(cache.size(k, v) for k, v in cache.data.items())
            assert cache.held == sizes <= cache.limit
    finally:
        set_cache_budget(old)
        clear_caches()
