"""Retrieval from many threads over shared entries equals the single-threaded run.

The module-level caches (parsed timestamps, content and message words) are the
only state shared between calls; ``clear_caches`` runs concurrently with the
readers to exercise them being emptied mid-call.
"""

import random
import sys
import threading

from conftest import NOW

from poolsplit import Pool, clear_caches, explain, retrieve, retrieve_pools

THREADS = 8
CALLS_PER_THREAD = 250  # 2,000 calls in all, a few seconds

TYPES = ["task", "fact", "skill", "correction", "note"]
WORDS = ["deploy", "cluster", "billing", "alpha", "release", "search", "the"]


def make_store(seed=5, size=120):
    rng = random.Random(seed)
    store = []
    for number in range(size):
        entry = {
            "id": f"e{number}" if number % 7 else number,
            "type": rng.choice(TYPES),
            "content": " ".join(rng.choices(WORDS, k=rng.randint(0, 8)))
            + f" item{number % 40}",
            "base_priority": rng.choice([1, 5, 9, 2.5]),
            "created": rng.choice(
                ["2025-12-01", "2025-06-01T10:00:00Z", 1_760_000_000, None, "bad"]
            ),
            "tags": rng.sample("abc", rng.randint(0, 2)),
        }
        if number % 17 == 0:
            entry["scope"] = "always"
        if number % 13 == 0:
            entry["status"] = "archived"
        store.append(entry)
    return store


STORE = make_store()
POOLS = [
    Pool("core", 0, 0, ("correction",)),
    Pool("work", 60, 5, ("task", "fact")),
    Pool("rest", 40, 4),
]
CONTEXTS = [
    None,
    {"message": "deploy the cluster"},
    {"message": "billing release item7", "tags": ["a"]},
    {"message": "search alpha", "project": "p"},
]


def ids(result):
    return {name: [id(e) for e in chosen] for name, chosen in result.items()}


def call(kind, context):
    """One call of the given kind, reduced to comparable identities."""
    if kind == 0:
        return ids(retrieve_pools(STORE, POOLS, context, now=NOW))
    if kind == 1:
        return [id(e) for e in retrieve(STORE, POOLS[2], context, now=NOW)]
    report = explain(STORE, POOLS, context, now=NOW)
    return (ids(report.selected()), report.decisions, report.warnings)


def test_threads_get_the_single_threaded_results():
    clear_caches()
    expected = {
        (kind, n): call(kind, context)
        for kind in range(3)
        for n, context in enumerate(CONTEXTS)
    }
    errors = []
    mismatches = []
    done = [0] * THREADS
    start = threading.Barrier(THREADS)

    def worker(number):
        rng = random.Random(number)
        try:
            start.wait()
            for _ in range(CALLS_PER_THREAD):
                if rng.random() < 0.05:
                    clear_caches()
                    continue
                kind = rng.randrange(3)
                n = rng.randrange(len(CONTEXTS))
                if call(kind, CONTEXTS[n]) != expected[kind, n]:
                    mismatches.append((number, kind, n))
                done[number] += 1
        except BaseException as exc:  # any exception is a failure
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads often, mid-call
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert mismatches == []
    assert sum(done) > THREADS * CALLS_PER_THREAD * 0.8  # thousands of calls ran


def test_shared_entries_are_not_modified_by_concurrent_calls():
    before = repr(STORE)
    threads = [
        threading.Thread(target=call, args=(i % 3, CONTEXTS[i % len(CONTEXTS)]))
        for i in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert repr(STORE) == before
