"""Reads from a streaming-replication standby (``read_url``, ``--read-db``).

A primary and a standby of its own are made here with PostgreSQL's tools
(``initdb``, ``pg_basebackup -R``, ``pg_ctl``) on loopback in a temporary
folder, as the ``postgres`` user when the tests run as root (initdb refuses
root; scripts/start-postgres.sh does the same). memory/README.md ("Reads from
a standby"): a read is served by the standby once it has replayed the
namespace's version the primary has at that moment, else by the primary, so
a recall sees every write acknowledged before it, by this process or any
other; a standby that is down or behind costs reads on the primary, never a
lost or unseen write.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from poolsplit_memory import _postgres, open_store

psycopg = pytest.importorskip("psycopg")

# One worker runs this module (scripts/test-memory.sh: --dist loadgroup), so
# that the module's primary and standby are made once, not once a worker.
pytestmark = pytest.mark.xdist_group("replication")

GUARD = 120  # seconds: a bound for a server to start or catch up, never a measure
# Writes through two --http instances with --read-db; issue 36's figure is
# POOLSPLIT_STANDBY_WRITES=1000 (benchmarks/README.md, team_scale section).
CROSS_WRITES = int(os.environ.get("POOLSPLIT_STANDBY_WRITES", "60"))


def _bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return None if initdb is None else os.path.dirname(initdb)


def _as_owner(args: list[str], **kwargs):
    if os.getuid() == 0:
        args = ["runuser", "-u", "postgres", "--", *args]
    return subprocess.run(
        args, check=True, capture_output=True, timeout=GUARD, **kwargs
    )


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Pair:
    """A primary and its standby on loopback; ``stop_standby`` kills it
    (``immediate``: no shutdown checkpoint, as a crash), ``start_standby``
    brings it back."""

    def __init__(self, folder: str, bin_dir: str) -> None:
        self.folder, self.bin = folder, bin_dir
        self.ports = {"primary": _port(), "standby": _port()}

    def url(self, which: str, database: str = "postgres") -> str:
        return f"postgresql://poolsplit@127.0.0.1:{self.ports[which]}/{database}"

    def ctl(self, which: str, *args: str) -> None:
        data = os.path.join(self.folder, which)
        _as_owner(
            [
                f"{self.bin}/pg_ctl",
                "-D",
                data,
                "-l",
                os.path.join(self.folder, f"{which}.log"),
                "-w",
                "-t",
                str(GUARD),
                *args,
            ]
        )

    def start(self, which: str) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.ports[which]} "
            f"-k {self.folder} -c fsync=off -c full_page_writes=off"
        )
        self.ctl(which, "-o", options, "start")

    def setup(self) -> None:
        primary = os.path.join(self.folder, "primary")
        _as_owner(
            [f"{self.bin}/initdb", "-D", primary, "-U", "poolsplit", "-A", "trust"]
            + ["-E", "UTF8", "--no-sync"]
        )
        self.start("primary")
        _as_owner(
            [f"{self.bin}/pg_basebackup", "-h", "127.0.0.1"]
            + ["-p", str(self.ports["primary"]), "-U", "poolsplit"]
            + ["-D", os.path.join(self.folder, "standby"), "-R", "-X", "stream"]
        )
        self.start("standby")

    def stop(self, which: str, mode: str = "fast") -> None:
        self.ctl(which, "-m", mode, "stop")


@pytest.fixture(scope="module")
def pair():
    bin_dir = _bin()
    if bin_dir is None or (os.getuid() == 0 and shutil.which("runuser") is None):
        if os.environ.get("POOLSPLIT_REQUIRE_PG") == "1":
            pytest.fail("POOLSPLIT_REQUIRE_PG=1 but no initdb to make a standby")
        pytest.skip("no initdb: cannot make a primary and a standby")
    folder = tempfile.mkdtemp(prefix="poolsplit-replica.")
    os.chmod(folder, 0o755)
    if os.getuid() == 0:
        shutil.chown(folder, "postgres")
    made = Pair(folder, bin_dir)
    try:
        made.setup()
        yield made
    finally:
        for which in ("standby", "primary"):
            with contextlib.suppress(subprocess.CalledProcessError):  # not running
                made.stop(which, "immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def urls(pair):
    """A new database on the primary, as (primary url, standby url), once
    the standby has replayed its creation."""
    name = f"r_{os.urandom(6).hex()}"
    with psycopg.connect(pair.url("primary"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    standby = pair.url("standby", name)
    deadline = time.monotonic() + GUARD
    while True:
        try:
            with psycopg.connect(standby, connect_timeout=5):
                break
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "the standby never saw the database"
            time.sleep(0.1)
    yield pair.url("primary", name), standby
    with psycopg.connect(pair.url("primary"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def replayed(primary: str, standby: str) -> None:
    """Wait until the standby has replayed everything the primary has written
    (at most GUARD seconds): a read then finds the standby current."""
    with psycopg.connect(primary, autocommit=True) as conn:
        target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + GUARD
    with psycopg.connect(standby, autocommit=True) as conn:
        while time.monotonic() < deadline:
            done = conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (str(target),)
            ).fetchone()[0]
            if done:
                return
            time.sleep(0.05)
    raise AssertionError("the standby never caught up")


def test_reads_go_to_the_standby_and_see_every_acknowledged_write(urls, monkeypatch):
    """Each write at once read back (by the standby if it replayed it within
    STANDBY_WAIT_S, else the primary: on a busy machine either), then, the
    standby caught up, every read is the standby's (a failure of the
    standby is not left aside here: each read tries it)."""
    monkeypatch.setattr(_postgres, "STANDBY_RETRY_S", 0.0)
    primary, standby = urls
    with open_store(primary, namespace="ada", read_url=standby) as store:
        backend = store._backend.backend
        ids = []
        for n in range(30):
            written = store.remember(f"note {n} marker{n}", type="fact")
            ids.append(written.id)
            assert written.id in store.recall(f"marker{n}").ids()["facts"]
            assert store.get(written.id)["content"] == f"note {n} marker{n}"
        replayed(primary, standby)
        before = backend.standby_reads
        assert all(store.get(ident) is not None for ident in ids)
        assert backend.standby_reads == before + len(ids), backend.standby_error
        with psycopg.connect(standby) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]


def test_another_instances_write_is_seen_through_the_standby(urls):
    """Two processes' worth of stores (separate pools: another pool size),
    one writing on the primary, one reading: every acknowledged write is in
    the other's next recall (it asks the primary which version is current)."""
    primary, standby = urls
    with open_store(primary, namespace="team", read_url=standby) as reader:
        reader.recall("warm")  # a snapshot to bring forward
        with open_store(primary, namespace="team", pool_size=2) as writer:
            for n in range(30):
                written = writer.remember(f"team note marker{n}", type="fact")
                assert written.id in reader.recall(f"marker{n}").ids()["facts"]


def test_a_standby_paused_behind_the_primary_costs_reads_not_writes(urls, monkeypatch):
    """Replay paused: the standby never reaches the version, so each read
    waits STANDBY_WAIT_S and is served by the primary; resumed, the
    standby serves again."""
    monkeypatch.setattr(_postgres, "STANDBY_WAIT_S", 0.05)
    monkeypatch.setattr(_postgres, "STANDBY_RETRY_S", 0.0)  # each read tries it
    primary, standby = urls
    with open_store(primary, namespace="ada", read_url=standby) as store:
        backend = store._backend.backend
        store.remember("first", type="fact")
        store.recall("first")
        with psycopg.connect(standby, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                before = backend.primary_reads
                written = store.remember("while paused marker", type="fact")
                # (the write brought the recall's snapshot forward: no read)
                assert written.id in store.recall("marker").ids()["facts"]
                assert store.get(written.id) is not None  # a read: the primary's
                assert backend.primary_reads > before, backend.standby_error
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")
        before = backend.standby_reads
        deadline = time.monotonic() + GUARD
        while backend.standby_reads == before and time.monotonic() < deadline:
            written = store.remember(f"after {time.monotonic()}", type="fact")
            assert store.get(written.id) is not None
        assert backend.standby_reads > before


def write_and_read_back(store, acked, unseen, errors, stop) -> None:
    """Remember, then get and recall the write at once, until ``stop``
    (at most 2,000 writes); a write not seen goes to ``unseen``."""
    try:
        for n in range(2000):
            if stop.is_set():
                return
            written = store.remember(f"{store.namespace} marker{n}", type="fact")
            acked.append(written.id)
            if store.get(written.id) is None:
                unseen.append(written.id)
            if written.id not in store.recall(f"marker{n}").ids()["facts"]:
                unseen.append(written.id)
    except BaseException as exc:  # the primary never goes down: none expected
        errors.append(exc)


def missing_from(url: str, ids: list[str]) -> list[str]:
    """The ids not (yet) in this server's copy, polled while any is missing
    (a standby replaying), for at most GUARD seconds."""
    deadline = time.monotonic() + GUARD
    while True:
        with psycopg.connect(url) as conn:
            stored = {
                row[0] for row in conn.execute("SELECT id FROM poolsplit_entries")
            }
        missing = [ident for ident in ids if ident not in stored]
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.1)


def test_the_standby_killed_and_restarted_under_load_loses_nothing(
    pair, urls, monkeypatch
):
    """Four writers each remember and at once read their write back, while
    the standby is killed (``-m immediate``) and started again, twice:
    every acknowledged write is in its writer's next get and recall and in
    both servers, and the standby serves reads again after its restart."""
    monkeypatch.setattr(_postgres, "STANDBY_RETRY_S", 0.2)
    primary, standby = urls
    stores = [
        open_store(primary, namespace=f"w{n}", read_url=standby) for n in range(4)
    ]
    backend = stores[0]._backend.backend
    acked: list[str] = []
    unseen: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=write_and_read_back, args=(s, acked, unseen, errors, stop)
        )
        for s in stores
    ]
    for thread in threads:
        thread.start()
    try:
        for _ in range(2):
            time.sleep(1)  # load before, during and after each outage
            pair.stop("standby", "immediate")
            time.sleep(1)
            pair.start("standby")
        time.sleep(1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(GUARD)
    try:  # back in service after the restart, once it caught up
        replayed(primary, standby)
        time.sleep(_postgres.STANDBY_RETRY_S)  # past any setting aside
        before = backend.standby_reads
        assert stores[0].list().entries  # w0 wrote: a read of the standby
        assert backend.standby_reads > before
    finally:
        for store in stores:
            store.close()
    assert not errors, errors[0]
    assert acked
    assert unseen == []
    assert missing_from(primary, acked) == []
    assert missing_from(standby, acked) == []


def test_two_http_instances_with_read_db_read_each_others_writes(pair, urls, tmp_path):
    """``poolsplit-mcp --http --read-db STANDBY`` twice on one primary: each
    write acknowledged by one instance (60, or POOLSPLIT_STANDBY_WRITES) is
    in the next recall on the other, and the instances read from the
    standby (their connections are there)."""
    from test_http import add_token, ok, rpc, serve

    primary, standby = urls
    token = add_token(tmp_path, "team", "a", "b", "c")
    flags = ("--tokens", tmp_path / "tokens.json", "--read-db", standby)
    with (
        serve(tmp_path, primary, *flags, workers=2) as one,
        serve(tmp_path, primary, *flags, workers=1) as two,
    ):
        missed = []
        for n in range(CROSS_WRITES):
            writer, reader = (one, two) if n % 2 else (two, one)
            tenant = "abc"[n % 3]
            written = ok(
                rpc(writer.base, "remember", {"content": f"marker{n}"}, token, tenant)
            )
            got = ok(
                rpc(reader.base, "recall", {"message": f"marker{n}"}, token, tenant)
            )
            if written["id"] not in {i for ids in got["pools"].values() for i in ids}:
                missed.append(n)
        assert missed == []
        with psycopg.connect(standby) as conn:
            (count,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                "current_database() AND backend_type = 'client backend' "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
        assert count > 0
