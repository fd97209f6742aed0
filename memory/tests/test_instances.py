"""Several ``poolsplit-mcp --http`` instances on one PostgreSQL (issue 36).

memory/README.md ("Several instances"): any number of instances may serve
one database behind a load balancer; a write acknowledged by one is in the
next recall on any other (each recall asks the database whether the
namespace changed), and each process holds at most ``--pool-size``
connections whatever the number of tenants it served. The servers are the
installed console script, started as test_http.py starts them.
"""

from __future__ import annotations

import time

import pytest
from test_http import add_token, ok, rpc, serve

psycopg = pytest.importorskip("psycopg")

TENANTS = [f"t{n}" for n in range(12)]


def client_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0])


def recalled_ids(reply) -> set[str]:
    found = ok(reply)
    return {ident for ids in found["pools"].values() for ident in ids}


def test_two_instances_read_each_others_writes_and_hold_the_pool_size(tmp_path, pg_url):
    """100 writes, each acknowledged by one instance and recalled at once on
    the other (alternating), over 12 tenants; then each of the 4 processes
    (2 instances x 2 workers) holds at most --pool-size 2 connections."""
    token = add_token(tmp_path, "team", *TENANTS)
    flags = ("--tokens", tmp_path / "tokens.json", "--pool-size", "2")
    with (
        serve(tmp_path, pg_url, *flags, workers=2) as one,
        serve(tmp_path, pg_url, *flags, workers=2) as two,
    ):
        missed = []
        for n in range(100):
            writer, reader = (one, two) if n % 2 else (two, one)
            tenant = TENANTS[n % len(TENANTS)]
            content = f"note {n} marker{n}"
            written = ok(
                rpc(writer.base, "remember", {"content": content}, token, tenant)
            )
            got = rpc(reader.base, "recall", {"message": f"marker{n}"}, token, tenant)
            if written["id"] not in recalled_ids(got):
                missed.append(n)
        assert missed == []
        # every tenant touched on both instances by both workers (likely):
        # the database holds at most pool size x processes
        for tenant in TENANTS:
            for server in (one, two):
                for _ in range(4):
                    ok(rpc(server.base, "recall", {"message": "note"}, token, tenant))
        assert client_connections(pg_url) <= 2 * 4
    deadline = time.monotonic() + 60
    while client_connections(pg_url) and time.monotonic() < deadline:
        time.sleep(0.1)  # the servers' connections close with their processes
    assert client_connections(pg_url) == 0
