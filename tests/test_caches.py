"""The caches (README "Performance"): bounded in bytes, never a change of
result, and nothing kept for a content no call passes in any more.

The bound is checked by recounting what each cache holds with the rule the
README states (``sys.getsizeof`` of key and value), not by trusting the
cache's own count; the budget is lowered on the module's caches so that a
few entries fill it.
"""

from __future__ import annotations

import itertools
import sys
import uuid
from contextlib import contextmanager

from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st
from oracle import oracle_retrieve_pools

import poolsplit
from poolsplit import DEFAULT_CACHE_BUDGET, Pool, clear_caches, retrieve_pools

CACHES = (poolsplit._parse_iso, poolsplit._content_words)
POOLS = [Pool("notes", 60, 3), Pool("rest", 200, 5)]


@contextmanager
def small_caches(limit):
    """Each cache empty and limited to ``limit`` bytes."""
    saved = [cache.limit for cache in CACHES]
    clear_caches()
    for cache in CACHES:
        cache.limit = limit
    calls, poolsplit._calls = poolsplit._calls, itertools.count(1)  # call 1 next
    try:
        yield
    finally:
        for cache, old in zip(CACHES, saved):
            cache.limit = old
        poolsplit._calls = calls
        clear_caches()


def recount(cache):
    """Bytes held by the README's rule, at least each key and value (the words
    of a content are shared with other contents, so they are left out)."""
    items = [*cache.new.items(), *cache.old.items()]
    return sum(sys.getsizeof(key) + sys.getsizeof(value) for key, (value, _) in items)


def held_keys(cache):
    return set(cache.new) | set(cache.old)


def test_the_default_budget_is_128_mib_shared_by_the_two_caches():
    assert DEFAULT_CACHE_BUDGET == 128 * 1024 * 1024
    limits = [cache.limit for cache in CACHES]
    assert limits == [DEFAULT_CACHE_BUDGET // 4, DEFAULT_CACHE_BUDGET * 3 // 4]


def test_a_content_not_passed_in_is_forgotten_within_16_calls():
    gone = {"id": "gone", "content": "deploy the canary service"}
    kept = {"id": "kept", "content": "deploy the billing service"}
    with small_caches(DEFAULT_CACHE_BUDGET):
        retrieve_pools([gone, kept], POOLS, {"message": "deploy service"}, now=NOW)
        for _ in range(15):
            assert gone["content"] in held_keys(poolsplit._content_words)
            retrieve_pools([kept], POOLS, {"message": "service deploy"}, now=NOW)
        assert gone["content"] not in held_keys(poolsplit._content_words)
        assert kept["content"] in held_keys(poolsplit._content_words)


def test_an_item_larger_than_the_limit_is_not_kept():
    big = {"id": "big", "content": "word " * 2_000 + "deploy"}
    with small_caches(2_000):
        pools = [Pool("p", 10**6, 1)]
        got = retrieve_pools([big], pools, {"message": "deploy"}, now=NOW)
        assert got == {"p": [big]}
        assert big["content"] not in held_keys(poolsplit._content_words)


def test_clear_caches_empties_both_generations():
    retrieve_pools(
        [{"content": "alpha beta", "created": "2025-01-01"}],
        POOLS,
        {"message": "alpha"},
        now=NOW,
    )
    clear_caches()
    for cache in CACHES:
        assert (held_keys(cache), cache.held, cache.held_old) == (set(), 0, 0)


WORDS = st.sampled_from(
    ["deploy", "canary", "billing", "rollback", "schema", "alpha", "beta", "gamma"]
)
CONTENTS = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)
ENTRY = st.fixed_dictionaries(
    {"content": CONTENTS},
    optional={
        "created": st.sampled_from(["2025-06-01", "2025-12-30T10:00Z", "2024-01-01"]),
        "base_priority": st.integers(1, 9),
    },
)
CALL = st.tuples(st.lists(ENTRY, max_size=8), st.lists(WORDS, max_size=3).map(" ".join))


@given(calls=st.lists(CALL, min_size=1, max_size=20), limit=st.integers(0, 3_000))
def test_bounded_forgetful_and_never_a_change_of_result(calls, limit):
    """After every call: each cache holds at most its limit in bytes
    (recounted), the caches hold only contents read since the
    generation before the current one began (every 8th call starts one), and
    the result is the oracle's."""
    with small_caches(limit):
        check_calls(calls, limit)


def check_calls(calls, limit):
    passed: list[set[str]] = []
    for number, (store, message) in enumerate(calls, 1):
        context = {"message": message}
        got = retrieve_pools(store, POOLS, context, now=NOW)
        want = oracle_retrieve_pools(store, POOLS, context, now=NOW)
        assert {k: [id(e) for e in v] for k, v in got.items()} == {
            k: [id(e) for e in v] for k, v in want.items()
        }
        for cache in CACHES:
            assert recount(cache) <= limit
        passed.append({e["content"] for e in store} | {message})
        recent = set().union(*passed[max(0, 8 * (number // 8 - 1) - 1) :])
        assert held_keys(poolsplit._content_words) <= recent


def test_a_full_cache_drops_the_older_generation_and_keeps_the_newer():
    """When an item would overflow, a new generation starts; the one that was
    newer stays (as the older) when it and the item fit together."""
    cache = poolsplit._Cache(lambda key: (key, 0), 1.0)
    one = sys.getsizeof("a" * 10) + poolsplit._ITEM_BYTES  # each key's bytes
    cache.limit = 2 * one + one // 2  # two items fit, three do not
    cache.miss("a" * 10)
    cache.age()  # as every 8th call does: "a..." is now the older generation
    cache.miss("b" * 10)
    assert (list(cache.old), list(cache.new)) == (["a" * 10], ["b" * 10])
    cache.miss("c" * 10)  # three would not fit: "a..." goes, "b..." stays
    assert (list(cache.old), list(cache.new)) == (["b" * 10], ["c" * 10])
    assert (cache.held_old, cache.held) == (one, one)


def fresh_words(count):
    """Words no str in the process equals yet, so none is interned before."""
    return [f"w{uuid.uuid4().hex}" for _ in range(count)]


def content_bytes(words, content):
    """A content's bytes by the README's rule: its key, its words' tuple and
    each word it is the first to bring, plus the cache's per-item overhead."""
    tuple_bytes = sys.getsizeof(tuple(words))
    word_bytes = sum(map(sys.getsizeof, words))
    return sys.getsizeof(content) + tuple_bytes + word_bytes + poolsplit._ITEM_BYTES


def test_a_content_that_fills_its_cache_exactly_is_kept_one_byte_more_is_not():
    """The README says an item larger than its cache's share is not kept: one
    of exactly the share is, counted as its key, its words' tuple and the
    words it is the first to bring."""
    for spare, kept in ((0, True), (-1, False)):
        words = fresh_words(3)
        entry = {"id": "x", "content": " ".join(words)}
        with small_caches(content_bytes(words, entry["content"]) + spare):
            retrieve_pools([entry], POOLS, {"message": words[0]}, now=NOW)
            held = entry["content"] in held_keys(poolsplit._content_words)
        assert held is kept, spare


def test_a_word_shared_by_two_contents_counts_for_the_first_only():
    for spare, both in ((0, True), (-1, False)):
        # Fresh words each round: Python 3.12 keeps an interned str for good,
        # so words a round interned would count for nobody in the next.
        words = fresh_words(3)
        first, second = " ".join(words), " ".join(reversed(words))
        size = content_bytes(words, first) + content_bytes([], second)
        size += sys.getsizeof(tuple(words)) - sys.getsizeof(())  # second's tuple
        entries = [{"id": 1, "content": first}, {"id": 2, "content": second}]
        with small_caches(size + spare):
            retrieve_pools(entries, POOLS, {"message": words[0]}, now=NOW)
            held = held_keys(poolsplit._content_words)
        assert ({first, second} <= held) is both, spare


def test_a_parsed_instant_counts_its_key_and_its_float():
    """A ``created`` string's item: the str and the float it parses to."""
    for spare, kept in ((0, True), (-1, False)):
        text = f"2025-06-0{3 + spare}T10:00:00Z"
        size = sys.getsizeof(text) + sys.getsizeof(0.0) + poolsplit._ITEM_BYTES
        with small_caches(size + spare):
            assert poolsplit.parse_created(text) is not None
            held = text in held_keys(poolsplit._parse_iso)
        assert held is kept, spare


def test_a_new_cache_holds_nothing_and_two_items_that_fill_it_exactly_stay():
    """A new cache has its share of the budget and holds 0 bytes, also after
    a new generation starts (every 8th call): two items whose bytes are
    exactly the limit are both kept in the newer generation."""
    assert poolsplit._Cache(lambda key: (key, 0), 1 / 4).limit == (
        DEFAULT_CACHE_BUDGET // 4
    )
    assert poolsplit._Cache(lambda key: (key, 0), 3 / 4).limit == (
        DEFAULT_CACHE_BUDGET * 3 // 4
    )
    for aged in (False, True):
        cache = poolsplit._Cache(lambda key: (key, 0), 1.0)
        one = sys.getsizeof("a" * 10) + poolsplit._ITEM_BYTES
        cache.limit = 2 * one
        if aged:
            cache.age()
        cache.miss("a" * 10)
        cache.miss("b" * 10)
        assert (list(cache.old), list(cache.new)) == ([], ["a" * 10, "b" * 10])


def test_a_hit_in_the_older_generation_moves_the_item_without_computing_it():
    computed = []
    cache = poolsplit._Cache(lambda key: (computed.append(key) or key.upper(), 0), 1.0)
    cache.miss("a")
    cache.age()
    assert cache.miss("a") == "A"
    assert computed == ["a"]
    assert (list(cache.old), list(cache.new), cache.held_old) == ([], ["a"], 0)


def two_item_cache():
    """A cache whose limit is exactly two items of 10 characters."""
    cache = poolsplit._Cache(lambda key: (key, 0), 1.0)
    cache.limit = 2 * (sys.getsizeof("a" * 10) + poolsplit._ITEM_BYTES)
    return cache


def generations(cache):
    return [key[0] for key in cache.old], [key[0] for key in cache.new]


def test_the_newer_generation_stays_when_it_and_the_next_item_fill_the_limit():
    cache = two_item_cache()
    cache.miss("a" * 10)
    cache.age()
    cache.miss("b" * 10)
    cache.miss("c" * 10)  # a new generation: "b" and "c" fill it exactly
    assert generations(cache) == (["b"], ["c"])


def test_a_dropped_generation_leaves_no_bytes_counted():
    cache = two_item_cache()
    for key in "abc":  # "a" and "b" fill it: at "c" both generations go
        cache.miss(key * 10)
    assert generations(cache) == ([], ["c"])
    cache.miss("d" * 10)  # "c" and "d" fill it exactly
    assert generations(cache) == ([], ["c", "d"])


def test_a_content_read_again_is_a_hit_not_counted_twice():
    """Two contents that fill the cache exactly both stay when a second call
    reads one of them again: a hit in the newer generation adds no bytes."""
    first, second = fresh_words(2), fresh_words(2)
    entries = [{"id": i, "content": " ".join(w)} for i, w in enumerate((first, second))]
    size = sum(content_bytes(w, e["content"]) for w, e in zip((first, second), entries))
    contents = {e["content"] for e in entries}
    with small_caches(size):
        for store in (entries, entries[:1]):
            retrieve_pools(store, POOLS, {"message": first[0]}, now=NOW)
            assert contents <= held_keys(poolsplit._content_words)
