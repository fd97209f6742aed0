"""A process serving many tenants stays within its memory budget (issue 36).

memory/README.md ("Many tenants, several instances"): the snapshots of all
of a process's stores together stay within the snapshot budget (estimated
bytes), the least recently used leaving first, the one just read kept even
when it alone is larger; and a process's resident memory (RSS) stays within
its base (what it holds before its first recall) plus 2.5 times the
budget (the allocator's partly used pages, the snapshots being read). The
process here is a fresh Python of its own, so that no other test's
allocations move its RSS; it reports, the test asserts.
"""

from __future__ import annotations

from conftest import run_probe

TENANTS = 50
ENTRIES = 150  # per tenant: ~1 MB of snapshot each, ~45 MB for all of them
BUDGET = 1024 * 1024  # room for about one tenant's snapshot
SLACK_MB = 10  # the rows of the read in flight, pages: well under 45 MB

PROBE = """
import io, json, sys
from pathlib import Path
from poolsplit_memory import open_store
from poolsplit_memory import store as store_module
from poolsplit_memory.store import set_snapshot_budget

tenants, entries, budget = (int(arg) for arg in sys.argv[1:4])
path = sys.argv[4]


def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")


words = "billing deploy schema invoice retry cache token ranking review".split()
stores = [open_store(path, namespace=f"t{n}") for n in range(tenants)]
for store in stores:
    store.import_jsonl(io.StringIO("".join(
        json.dumps({"type": "fact", "content": f"{store.namespace} fact {k}: "
                    + " ".join(words[(k * 7 + j) % len(words)] for j in range(12))})
        + "\\n" for k in range(entries))))
set_snapshot_budget(budget)
cache = store_module.snapshots
base = rss_mb()
over = []  # (estimated total, snapshots held) whenever over the budget
for _ in range(3):
    for store in stores:
        assert store.recall("billing deploy").ids()["facts"]
        held = sum(cache.count(s._owner) for s in stores)
        if cache.total > budget:
            over.append((cache.total, held))
print(json.dumps({"base": base, "after": rss_mb(), "over": over,
                  "evicted": cache.evicted, "total": cache.total}))
"""


def probe(tmp_path, budget: int) -> dict:
    args = [str(TENANTS), str(ENTRIES), str(budget), str(tmp_path / "memory.db")]
    return run_probe(PROBE, args, tmp_path)


def test_many_tenants_stay_within_the_snapshot_budget_and_rss_with_it(tmp_path):
    """50 tenants of 150 entries, each recalled 3 times in turn, with a 1 MiB
    budget: the estimate is over the budget only while the one snapshot just
    read is held alone; every tenant but the last left the cache each round;
    RSS grows by less than 2.5 times the budget plus 10 MB (all 50
    snapshots held would take about 45 MB)."""
    got = probe(tmp_path, BUDGET)
    assert all(held == 1 for _, held in got["over"]), got["over"]
    assert got["evicted"] >= 3 * TENANTS - 1
    grown = got["after"] - got["base"]
    assert grown <= 2.5 * BUDGET / 2**20 + SLACK_MB, got


def test_cold_namespaces_are_read_whole_one_at_a_time(tmp_path, monkeypatch):
    """Eight threads each recall a namespace not yet in this process's
    cache: the snapshots are built one after another (a process holds at
    most one half-built snapshot beside its budget), and every recall
    still answers from its own namespace."""
    import threading
    import time

    from poolsplit_memory import open_store
    from poolsplit_memory import store as store_module

    path = str(tmp_path / "memory.db")
    names = [f"cold{n}" for n in range(8)]
    written = {}
    for name in names:
        with open_store(path, namespace=name) as store:
            written[name] = store.remember(
                f"{name} keeps the invoice schema", type="fact"
            ).id
    building = 0
    most = 0
    lock = threading.Lock()
    apply = store_module._Snapshot.apply

    def counted(self, changed, rows):
        nonlocal building, most
        with lock:
            building += 1
            most = max(most, building)
        try:
            time.sleep(0.05)  # long enough for the other threads to arrive
            return apply(self, changed, rows)
        finally:
            with lock:
                building -= 1

    monkeypatch.setattr(store_module._Snapshot, "apply", counted)
    stores = [open_store(path, namespace=name) for name in names]
    found: dict[str, list[str]] = {}
    start = threading.Barrier(len(stores))

    def recall(store):
        start.wait()
        ids = store.recall("invoice schema").ids()
        found[store.namespace] = [i for pool in ids.values() for i in pool]

    threads = [threading.Thread(target=recall, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert most == 1
    assert found == {name: [written[name]] for name in names}


def test_a_slow_read_of_one_namespace_holds_up_no_other(tmp_path):
    """Only building a snapshot is one at a time, not the read before it:
    while store A's whole read waits (a busy pool, a standby catching up),
    store B, on another database, is read and recalled cold."""
    import threading

    from poolsplit_memory import open_store

    a = open_store(str(tmp_path / "a.db"), namespace="a")
    b = open_store(str(tmp_path / "b.db"), namespace="b")
    a.remember("billing invoice paid", type="fact")
    b_id = b.remember("deploy the search service", type="fact").id
    a_reading, b_done = threading.Event(), threading.Event()
    a_waited: list[bool] = []
    real = a._backend.since  # the recall's read (whole, or what changed)

    def held_read(*args):
        a_reading.set()
        a_waited.append(b_done.wait(30))  # a guard against a hang, not a measure
        return real(*args)

    a._backend.since = held_read
    reader = threading.Thread(target=lambda: a.recall("billing"))
    reader.start()
    try:
        assert a_reading.wait(30)
        got = b.recall("deploy").ids()
        b_done.set()
    finally:
        b_done.set()
        reader.join(60)
        a.close()
        b.close()
    assert [i for ids in got.values() for i in ids] == [b_id]
    assert a_waited == [True]  # B was answered while A's read was held
