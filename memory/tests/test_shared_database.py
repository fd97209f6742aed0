"""What every process on one database shares (issue 26's leftovers, issue 28).

``list``'s ``next_cursor`` is keyed by a secret of the database, so every
Store, process and HTTP worker on one database accepts every cursor of its
namespace and none of another; the identical-memory check finds a twin by
its indexed digest, and still finds the rows written without one (by hand,
by another tool, by 0.1.0). The expectations come from memory/README.md
("Identical memories", "list's next_cursor"): the oracle below normalises
whitespace itself and imports nothing of the store's rules.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from typing import Any

import pytest
from _schema_0_1_0 import create_0_1_0
from conftest import execute_raw, plant
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_memory import InvalidInput, open_store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
HANG = 120  # seconds: a guard against a hung child, never a measurement


def refusal(cursor: str) -> str:
    """The one line a cursor that is not this namespace's gets (README)."""
    return (
        "cursor: must be a next_cursor that list gave in this namespace, "
        f"got {cursor!r}; list again with no cursor"
    )


def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url) as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
    conn = sqlite3.connect(url)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# --- cursors: one database, many stores and processes -----------------------


def test_two_stores_on_one_database_accept_each_others_cursors(open_):
    first, second = open_("ada"), open_("ada")
    ids = [first.remember(f"entry {n}", now=NOW).id for n in range(5)]
    cursor = first.list(limit=2).next_cursor
    page = second.list(limit=2, cursor=cursor)
    assert [e["id"] for e in page.entries] == ids[2:4]
    rest = first.list(limit=2, cursor=page.next_cursor)
    assert [e["id"] for e in rest.entries] == ids[4:]
    assert rest.next_cursor is None


def test_a_cursor_of_another_namespace_is_refused_in_one_line(open_):
    """Same database, another Store object: still refused, with the line a
    made-up cursor gets, and nothing of the other namespace is read."""
    ada, bob = open_("ada"), open_("bob")
    for n in range(3):
        ada.remember(f"ada {n}", now=NOW)
        bob.remember(f"bob {n}", now=NOW)
    cursor = ada.list(limit=1).next_cursor
    assert cursor is not None
    for reader in (bob, open_("bob")):
        with pytest.raises(InvalidInput) as info:
            reader.list(limit=1, cursor=cursor)
        assert info.value.field == "cursor"
        assert str(info.value) == refusal(cursor)
    made_up = "A" * len(cursor)
    with pytest.raises(InvalidInput) as info:
        ada.list(limit=1, cursor=made_up)
    assert str(info.value) == refusal(made_up)


def test_a_cursor_of_another_database_is_refused(open_, tmp_path):
    store = open_("ada")
    for n in range(3):
        store.remember(f"ada {n}", now=NOW)
    with open_store(str(tmp_path / "other.db"), namespace="ada") as other:
        for n in range(3):
            other.remember(f"ada {n}", now=NOW)
        cursor = other.list(limit=1).next_cursor
    with pytest.raises(InvalidInput) as info:
        store.list(limit=1, cursor=cursor)
    assert str(info.value) == refusal(cursor)


LISTER = """
import os, sys, time
from poolsplit_memory import open_store

url, namespace, go = sys.argv[1:4]
print("ready", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.002)
with open_store(url, namespace=namespace) as store:
    print(store.list(limit=1).next_cursor, flush=True)
"""


def test_processes_drawing_the_secret_at_once_agree_on_it(store_url, tmp_path):
    """Four processes list a database whose cursor secret no one drew yet,
    released together: one secret is stored, and this process continues
    every cursor they gave (as the next worker behind one port would)."""
    with open_store(store_url, namespace="ada") as store:
        ids = [store.remember(f"entry {n}", now=NOW).id for n in range(3)]
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", LISTER, store_url, "ada", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for child in children:
            assert child.stdout.readline().strip() == "ready"
        go.touch()
        cursors = []
        for child in children:
            out, err = child.communicate(timeout=HANG)
            assert child.returncode == 0, err
            cursors.append(out.strip())
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert query(store_url, "SELECT count(*) FROM poolsplit_secrets") == [(1,)]
    with open_store(store_url, namespace="ada") as store:
        for cursor in cursors:
            page = store.list(limit=5, cursor=cursor)
            assert [e["id"] for e in page.entries] == ids[1:]
        with open_store(store_url, namespace="bob") as bob:
            with pytest.raises(InvalidInput) as info:
                bob.list(cursor=cursors[0])
            assert str(info.value) == refusal(cursors[0])


def test_a_cursor_outlives_the_process_that_gave_it(store_url):
    with open_store(store_url, namespace="ada") as store:
        ids = [store.remember(f"entry {n}", now=NOW).id for n in range(3)]
        cursor = store.list(limit=1).next_cursor
    with open_store(store_url, namespace="ada") as reopened:
        assert [e["id"] for e in reopened.list(cursor=cursor).entries] == ids[1:]


def test_http_workers_accept_each_others_cursors(tmp_path):
    """Two workers behind one port, a fresh connection per page: every page
    is answered, whichever worker takes it, and both workers answer."""
    pytest.importorskip("mcp")
    from test_http import add_token, ok, rpc, serve, tool_error, worker_pids

    token = add_token(tmp_path, "ada", "ada")
    other = add_token(tmp_path, "bob", "bob")
    tokens = tmp_path / "tokens.json"
    with serve(tmp_path, tmp_path / "m.db", "--tokens", tokens, workers=2) as server:
        ids = [
            ok(rpc(server.base, "remember", {"content": f"entry {n}"}, token))["id"]
            for n in range(12)
        ]
        seen, cursor = [], None
        for _ in range(len(ids)):
            arguments: dict[str, Any] = {"limit": 1}
            if cursor is not None:
                arguments["cursor"] = cursor
            page = ok(rpc(server.base, "list", arguments, token))
            seen.extend(e["id"] for e in page["entries"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == ids
        assert len(worker_pids(server, 2)) == 2
        first = ok(rpc(server.base, "list", {"limit": 1}, token))["next_cursor"]
        refused = tool_error(rpc(server.base, "list", {"cursor": first}, other))
        assert refused == refusal(first)


# --- the identical-memory check by digest -------------------------------------


def test_a_fresh_memory_reads_no_row_among_many_with_its_words(open_):
    """200 active notes holding every word of the new one: the check reads
    none of them (the digest differs), where matching the words read all."""
    store = open_("ada")
    lines = "".join(
        json.dumps({"id": f"n{i}", "content": f"note {i} about the billing run"}) + "\n"
        for i in range(200)
    )
    store.import_jsonl(io.StringIO(lines))
    before = store._backend.rows_read
    written = store.remember("about the billing run", now=NOW)
    assert written.warnings == []
    assert store._backend.rows_read == before
    again = store.remember("about  the billing\nrun", now=NOW)
    assert again.id == written.id and again.warnings[-1].startswith("idempotent:")
    assert store._backend.rows_read == before + 1  # the twin, and nothing else


def test_every_write_path_stores_the_digest(open_, store_url):
    store = open_("ada")
    old = store.remember("alpha", type="fact", now=NOW)
    new = store.remember("beta", type="fact", supersedes=old.id, now=NOW)
    store.update(new.id, content="gamma")
    store.import_jsonl(io.StringIO(json.dumps({"id": "i1", "content": "delta"}) + "\n"))
    store.import_jsonl(
        io.StringIO(json.dumps({"id": "i1", "content": "epsilon"}) + "\n"),
        replace=True,
    )
    assert query(
        store_url, "SELECT count(*) FROM poolsplit_entries WHERE memory_hash IS NULL"
    ) == [(0,)]
    assert store.remember("gamma", type="fact", now=NOW).id == new.id
    assert store.remember(" epsilon ", now=NOW).id == "i1"


@pytest.mark.parametrize("how", ["remember", "import"])
def test_a_row_written_without_a_digest_is_still_found(open_, store_url, how):
    """A row another tool inserted (no memory_hash) is the same memory."""
    store = open_("ada")
    store.remember("something else", type="correction", now=NOW)
    body = {"id": "h1", "type": "correction", "content": "Never deploy on Fridays."}
    plant(store_url, "ada", "h1", body, type="correction")
    if how == "remember":
        written = store.remember("Never  deploy on Fridays.", type="correction")
        assert written.id == "h1" and written.warnings[-1].startswith("idempotent:")
    else:
        line = {"type": "correction", "content": "Never deploy on\tFridays."}
        count = store.import_jsonl(io.StringIO(json.dumps(line) + "\n"))
        assert count == 0 and "'h1'" in count.warnings[0]


def test_an_import_beside_a_hand_written_row_with_a_list_scope(open_, store_url):
    """A stored scope that is a JSON list is no memory of a file's line (the
    import once failed on it with a bare TypeError)."""
    store = open_("ada")
    body = {"id": "h1", "type": "fact", "content": "tea", "scope": ["a"]}
    plant(store_url, "ada", "h1", body, type="fact")
    line = {"id": "x1", "type": "fact", "content": "tea"}
    assert store.import_jsonl(io.StringIO(json.dumps(line) + "\n")) == 1


def test_a_row_without_a_digest_is_read_once_then_found_by_its_digest(open_, store_url):
    """The first check that reads a planted row gives it its digest (a row
    that is not an entry too: it is no memory until its body changes)."""
    store = open_("ada")
    body = {"id": "h1", "type": "fact", "content": "tea"}
    plant(store_url, "ada", "h1", body, type="fact")
    plant(store_url, "ada", "h2", "not json", type="fact")
    before = store._backend.rows_read
    store.remember("coffee", type="fact", now=NOW)
    assert store._backend.rows_read == before + 2  # both planted rows, once
    store.remember("water", type="fact", now=NOW)
    assert store._backend.rows_read == before + 2
    assert store.remember("tea", type="fact", now=NOW).id == "h1"
    assert store._backend.rows_read == before + 3  # h1, by its digest
    execute_raw(
        store_url,
        "UPDATE poolsplit_entries SET body = ? WHERE id = ?",
        (json.dumps({"id": "h2", "type": "fact", "content": "milk"}), "h2"),
    )
    assert store.remember("milk", type="fact", now=NOW).id == "h2"


def test_a_body_edited_by_hand_is_compared_as_it_now_reads(open_, store_url):
    """An UPDATE of a body that leaves memory_hash alone: the old digest is
    cleared, so the edited row is found as what it now says, and a remember
    of what it said before is a new memory."""
    store = open_("ada")
    first = store.remember("ship on Mondays", type="fact", now=NOW)
    edited = json.dumps({"id": first.id, "type": "fact", "content": "ship on Tuesdays"})
    execute_raw(
        store_url,
        "UPDATE poolsplit_entries SET body = ? WHERE id = ?",
        (edited, first.id),
    )
    assert store.remember("ship on Tuesdays", type="fact", now=NOW).id == first.id
    assert store.remember("ship on Mondays", type="fact", now=NOW).id != first.id


def test_a_0_1_0_database_finds_its_old_memories(store_url, tmp_path):
    """After the migration the 0.1.0 rows have no digest: still found."""
    from conftest import create_pg_database, drop_pg_database

    if store_url.startswith("postgres"):
        url, admin = create_pg_database()
    else:
        url, admin = str(tmp_path / "old.db"), None
    try:
        entries = [
            {"id": "c1", "type": "correction", "content": "Never deploy on Fridays.",
             "scope": "always", "created": "2026-05-01T00:00:00+00:00"},
        ]  # fmt: skip
        create_0_1_0(url, "ada", entries)
        with open_store(url, namespace="ada") as store:
            again = store.remember(
                " Never deploy on Fridays. ", type="correction", scope="always"
            )
            assert again.id == "c1"
            assert again.warnings[-1].startswith("idempotent:")
            with pytest.raises(InvalidInput) as info:
                store.update(
                    store.remember("x", type="correction", scope="always").id,
                    content="Never deploy on Fridays.",
                )
            assert "'c1'" in str(info.value)
    finally:
        if admin is not None:
            drop_pg_database(url, admin)


# --- the check against an oracle, with rows from every writer ---------------

CONTENTS = ("tea at four", "tea  at four", " tea at\tfour", "Tea at four", "coffee")
operations = st.lists(
    st.tuples(
        st.sampled_from(["remember", "plant", "update", "hand-edit", "retire"]),
        st.sampled_from(CONTENTS),
        st.sampled_from(["fact", "task"]),
        st.sampled_from([None, "always"]),
        st.integers(0, 20),
    ),
    max_size=14,
)


def same_memory(a: dict[str, Any], content: str, kind: str, scope: object) -> bool:
    """README: content after whitespace normalisation, type and scope equal."""
    return (
        " ".join(str(a.get("content", "")).split()) == " ".join(content.split())
        and a.get("type", "note") == kind
        and a.get("scope") == scope
    )


def active(entry: dict[str, Any]) -> bool:
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


@given(ops=operations)
def test_property_a_remember_returns_a_stored_twin_exactly_when_there_is_one(
    open_, store_url, ops
):
    namespace = f"p{os.urandom(4).hex()}"
    store = open_(namespace)
    mark = 0
    for op, content, kind, scope, pick in ops:
        listed = store.list(limit=500).entries
        if op == "remember":
            twins = [
                e["id"]
                for e in listed
                if active(e) and same_memory(e, content, kind, scope)
            ]
            written = store.remember(content, type=kind, scope=scope, now=NOW)
            if twins:
                assert written.id in twins
                assert written.warnings[-1].startswith("idempotent:")
            else:
                assert not any(w.startswith("idempotent") for w in written.warnings)
                assert store.get(written.id)["content"] == content
        elif op == "plant":
            mark += 1
            body = {"id": f"h{mark}", "type": kind, "content": content}
            if scope is not None:
                body["scope"] = scope
            plant(store_url, namespace, f"h{mark}", body, type=kind, scope=scope)
        elif listed and op == "hand-edit":
            target = listed[pick % len(listed)]
            edited = json.dumps({**target, "content": content})
            execute_raw(
                store_url,
                "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
                (edited, namespace, target["id"]),
            )
        elif listed and op == "update":
            target = listed[pick % len(listed)]
            others = [
                e["id"]
                for e in listed
                if e["id"] != target["id"]
                and active(e)
                and active(target)
                and same_memory(e, content, target.get("type", "note"),
                                target.get("scope"))
            ]  # fmt: skip
            if others:
                with pytest.raises(InvalidInput) as info:
                    store.update(target["id"], content=content)
                assert any(repr(i) in str(info.value) for i in others)
            else:
                store.update(target["id"], content=content)
        elif listed and op == "retire":
            target = listed[pick % len(listed)]
            if active(target):
                store.remember(f"replaces {mark}", supersedes=target["id"], now=NOW)
                mark += 1
