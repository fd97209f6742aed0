"""poolsplit-mcp --http end to end: the installed console script, real HTTP.

Each server is the ``poolsplit-mcp`` script installed next to this
interpreter, bound to 127.0.0.1 on a port the kernel picks (``:0``; the
server prints it), its working directory in ``tmp_path``. Clients are plain
HTTP (``http.client``: the exact bytes and statuses) and the ``mcp`` client's
Streamable HTTP transport. Every loop is bounded in count and in time; no
assertion is about time.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

mcp = pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

import anyio  # noqa: E402 (an mcp dependency)
import httpx2  # noqa: E402 (the mcp client's HTTP library)
from _mcp_client import HEADERS, jsonrpc, request  # noqa: E402
from conftest import create_pg_database, drop_pg_database  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from poolsplit_memory import open_store  # noqa: E402

SERVER = Path(sys.executable).with_name("poolsplit-mcp")
TOOLS = {
    "remember",
    "recall",
    "get",
    "history",
    "list",
    "update",
    "forget",
    "explain",
}
START = 120  # seconds: a guard for a server to come up, never a measurement


# --- a server and its clients -----------------------------------------------


class Server:
    def __init__(self, proc, base, log):
        self.proc, self.base, self.log = proc, base, log

    def stderr(self):
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def serve(tmp_path, db, *args, workers=1, address="127.0.0.1:0", healthz=True):
    """``poolsplit-mcp --http ADDRESS`` over ``db``; stopped by SIGTERM.
    ``healthz=False``: no /healthz before the test's first request (a
    /healthz opens the worker's store)."""
    log = tmp_path / f"server-{uuid.uuid4().hex[:6]}.err"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [SERVER, "--http", address, "--db", str(db)]
            + [str(a) for a in args]
            + ["--workers", str(workers)],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        )
    try:
        base = None
        deadline = time.monotonic() + START
        while base is None and time.monotonic() < deadline:
            found = re.search(r"http://127\.0\.0\.1:\d+", log.read_text())
            base = found.group(0) if found else None
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert base is not None, log.read_text()
        server = Server(proc, base, log)
        if healthz:
            assert worker_pids(server, workers), server.stderr()
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def worker_pids(server, workers):
    """The pids /healthz reports, until ``workers`` distinct ones (bounded)."""
    pids = set()
    deadline = time.monotonic() + START
    for _ in range(400):
        if len(pids) >= workers or time.monotonic() > deadline:
            break
        try:
            status, _, data = request(server.base, "GET", "/healthz", timeout=10)
        except OSError:
            time.sleep(0.1)
            continue
        if status == 200:
            pids.add(json.loads(data)["pid"])
        else:
            time.sleep(0.1)
    return pids


def rpc(base, tool, arguments, token=None, namespace=None, headers=None):
    """(status, body) of a tools/call over plain HTTP: the JSON-RPC reply
    when the body is JSON, else its text."""
    params = {"name": tool, "arguments": arguments}
    return jsonrpc(base, "tools/call", params, token, namespace, headers)


def ok(reply):
    status, body = reply
    assert status == 200, reply
    result = body["result"]
    assert not result["isError"], result
    return result["structuredContent"]


def tool_error(reply):
    status, body = reply
    assert status == 200, reply
    result = body["result"]
    assert result["isError"], result
    (block,) = result["content"]
    assert "\n" not in block["text"]
    return block["text"]


def add_token(tmp_path, name, *namespaces, read_only=False, pin=False):
    args = [SERVER, "token", "--tokens", tmp_path / "tokens.json", "add", name]
    for namespace in namespaces:
        args += ["--namespace", namespace]
    if read_only:
        args.append("--read-only")
    if pin:
        args.append("--pin")
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def exported(url, namespace, tmp_path):
    """The namespace's entries, by id, from export_jsonl."""
    path = tmp_path / f"export-{namespace}-{uuid.uuid4().hex[:6]}.jsonl"
    with open_store(url, namespace=namespace) as store:
        store.export_jsonl(path)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return {entry["id"]: entry for entry in entries}


@pytest.fixture
def pg_db():
    url, admin = create_pg_database()
    yield url
    drop_pg_database(url, admin)


@pytest.fixture(params=["sqlite", "postgres"])
def any_db(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db")
    else:
        url, admin = create_pg_database()
        yield url
        drop_pg_database(url, admin)


# --- starting -----------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "[::]", "example.com"])
def test_http_non_loopback_bind_without_tokens_exits_2_with_one_line(tmp_path, host):
    done = subprocess.run(
        [SERVER, "--http", f"{host}:8765", "--db", tmp_path / "m.db"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "needs --tokens" in done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before anything opened


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "not JSON"),
        ('{"tokens": [{"name": "a"}]}', "tokens[0].sha256: must be 64"),
        (
            '{"tokens": [{"name": "a", "sha256": "'
            + "0" * 64
            + '", "namespaces": []}]}',
            "tokens[0].namespaces: must be a non-empty list",
        ),
    ],
)
def test_http_bad_tokens_file_exits_2_naming_the_entry(tmp_path, content, expected):
    (tmp_path / "tokens.json").write_text(content)
    done = subprocess.run(
        [SERVER, "--http", "127.0.0.1:0", "--db", tmp_path / "m.db"]
        + ["--tokens", tmp_path / "tokens.json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_http_token_add_prints_the_token_once_and_stores_its_hash(tmp_path):
    token = add_token(tmp_path, "ada", "ada", "team")
    assert re.fullmatch(r"psm_[A-Za-z0-9_-]{43}", token)
    path = tmp_path / "tokens.json"
    text = path.read_text()
    assert token not in text and token[4:] not in text
    (record,) = json.loads(text)["tokens"]
    assert record["name"] == "ada" and record["namespaces"] == ["ada", "team"]
    assert len(record["sha256"]) == 64 and record["read_only"] is False
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = subprocess.run(
        [SERVER, "token", "--tokens", path, "add", "ada", "--namespace", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and "exists" in again.stderr
    assert again.stdout == ""  # no second token printed
    assert json.loads(path.read_text())["tokens"] == [record]


def test_http_tokens_grants_read_from_scopes():
    from poolsplit_memory._tokens import Grant, grants_from_scopes

    assert grants_from_scopes(
        ["openid", "poolsplit-read:team", "poolsplit-write:a:b", "poolsplit-write:team",
         "poolsplit-read:", "poolsplit-write", "Poolsplit-write:x"]
    ) == {"team": Grant(True), "a:b": Grant(True)}  # fmt: skip
    assert list(grants_from_scopes(["poolsplit-read:z", "poolsplit-write:a"])) == [
        "z",
        "a",
    ]  # the first grant is /mcp's


@given(
    tokens=st.lists(
        st.text(min_size=1, max_size=30), min_size=1, max_size=6, unique=True
    ),
    probe=st.text(max_size=30),
)
def test_http_tokens_a_token_matches_only_its_own_record(tokens, probe):
    from poolsplit_memory._tokens import TokenRecord, hash_token, match_token

    records = [
        TokenRecord(f"n{i}", hash_token(token), ("ns",))
        for i, token in enumerate(tokens)
    ]
    for i, token in enumerate(tokens):
        assert match_token(records, token) is records[i]
    expected = records[tokens.index(probe)] if probe in tokens else None
    assert match_token(records, probe) is expected


def test_http_tokens_a_hash_listed_twice_matches_its_first_record():
    """A hand-edited file may list one token's hash twice: the first record
    (its grants) is the one, as for a token file read top down."""
    from poolsplit_memory._tokens import TokenRecord, hash_token, match_token

    digest = hash_token("psm_same")
    first = TokenRecord("first", digest, ("a",))
    second = TokenRecord("second", digest, ("b",), read_only=True)
    assert match_token([first, second], "psm_same") is first
    assert match_token([second, first], "psm_same") is second


@given(
    tokens=st.lists(st.sampled_from("abcd"), max_size=6),
    probe=st.sampled_from("abcde"),
)
def test_http_tokens_the_index_by_hash_agrees_with_a_scan(tokens, probe):
    """WatchedTokens.match (a dict by hash) finds what a plain scan finds:
    the first record holding the probe's hash, or none."""
    from poolsplit_memory._tokens import TokenRecord, WatchedTokens, hash_token

    records = [
        TokenRecord(f"n{i}", hash_token(token), ("ns",))
        for i, token in enumerate(tokens)
    ]
    scanned = next((r for r in records if r.sha256 == hash_token(probe)), None)
    assert WatchedTokens(records).match(probe) is scanned


def test_http_tokens_a_lookup_among_many_reads_one_record():
    """Issue 52: a request's token is found by its hash in a dict, not by a
    scan of every record: among 10,000 tokens, each of 200 lookups (found or
    not) reads at most the one record stored under its digest."""
    from poolsplit_memory._tokens import TokenRecord, WatchedTokens, hash_token

    class Counted:  # a record that counts the reads of its hash
        reads = 0

        def __init__(self, record):
            self.record = record

        @property
        def sha256(self):
            Counted.reads += 1
            return self.record.sha256

    tokens = [f"psm_token-{i}" for i in range(10_000)]
    records = [Counted(TokenRecord(f"n{i}", hash_token(t), ("ns",))) for i, t in
               enumerate(tokens)]  # fmt: skip
    watched = WatchedTokens(records)
    Counted.reads = 0
    for i in range(0, 10_000, 100):
        assert watched.match(tokens[i]) is records[i]
        assert watched.match(f"psm_absent-{i}") is None
    assert Counted.reads <= 100


def tokens_document(*names):
    """A tokens file's text, one read-write token per name (token psm_NAME),
    and its records: same-length names give same-size documents."""
    from poolsplit_memory._tokens import hash_token

    return json.dumps(
        {
            "version": 1,
            "tokens": [
                {
                    "name": name,
                    "sha256": hash_token(f"psm_{name}"),
                    "namespaces": ["team"],
                    "read_only": False,
                }
                for name in names
            ],
        }
    )


def rewrite_in_place_keeping_size_and_mtime(path, text):
    """Overwrite ``path`` (same inode) with ``text`` of the same size, then
    put its modification time back: only the content says it changed."""
    before = path.stat()
    data = text.encode()
    assert len(data) == before.st_size
    with open(path, "r+b") as file:
        file.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def test_http_tokens_a_same_size_same_mtime_replacement_is_reloaded(tmp_path):
    from poolsplit_memory._tokens import WatchedTokens, read_tokens

    path = tmp_path / "tokens.json"
    path.write_text(tokens_document("ada"))
    watched = WatchedTokens(read_tokens(str(path)), str(path), interval=0)
    assert watched.match("psm_ada").name == "ada"
    rewrite_in_place_keeping_size_and_mtime(path, tokens_document("bob"))
    assert watched.match("psm_ada") is None
    assert watched.match("psm_bob").name == "bob"


@pytest.mark.parametrize("emptied", ["", "\n", " \n\t", '{"version": 1, "tokens": []}'])
def test_http_tokens_an_emptied_file_revokes_every_token(tmp_path, emptied):
    """No bytes, only whitespace, or an empty list: no token stays valid
    (a blank file is not read as a broken one that keeps the last tokens)."""
    from poolsplit_memory._tokens import WatchedTokens, read_tokens

    path = tmp_path / "tokens.json"
    path.write_text(tokens_document("ada", "bob"))
    watched = WatchedTokens(read_tokens(str(path)), str(path), interval=0)
    assert watched.match("psm_bob").name == "bob"
    path.write_text(emptied)
    assert watched.match("psm_ada") is None
    assert watched.match("psm_bob") is None
    assert watched.records() == ()
    path.write_text(tokens_document("ada"))  # and a token added again works
    assert watched.match("psm_ada").name == "ada"


def test_http_tokens_a_worker_reads_the_file_not_its_supervisors_copy(tmp_path):
    """A worker starts with the records its supervisor read; a token
    removed from the file meanwhile is refused on the first request."""
    from poolsplit_memory._tokens import WatchedTokens, read_tokens

    path = tmp_path / "tokens.json"
    path.write_text(tokens_document("ada", "bob"))
    started_with = read_tokens(str(path))
    path.write_text(tokens_document("bob"))
    watched = WatchedTokens(started_with, str(path))  # the default interval
    assert watched.match("psm_ada") is None
    assert watched.match("psm_bob").name == "bob"


def test_http_tokens_a_broken_file_keeps_the_last_good_tokens(tmp_path, capsys):
    from poolsplit_memory._tokens import WatchedTokens, read_tokens

    path = tmp_path / "tokens.json"
    path.write_text(tokens_document("ada"))
    watched = WatchedTokens(read_tokens(str(path)), str(path), interval=0)
    assert watched.match("psm_ada").name == "ada"
    assert capsys.readouterr().err == ""  # the same content: nothing to say
    for broken in ("{", b"\xff\xfe"):
        if isinstance(broken, bytes):
            path.write_bytes(broken)
        else:
            path.write_text(broken)
        assert watched.match("psm_ada").name == "ada"
        assert watched.match("psm_ada").name == "ada"
        err = capsys.readouterr().err
        assert err.count("tokens not reloaded") == 1, err  # once per change
    path.unlink()
    assert watched.match("psm_ada").name == "ada"
    assert "cannot read it" in capsys.readouterr().err
    path.write_text(tokens_document("bob"))
    assert watched.match("psm_ada") is None
    assert "tokens reloaded" in capsys.readouterr().err


def test_http_token_list_and_remove(tmp_path):
    path = tmp_path / "tokens.json"
    first = add_token(tmp_path, "ada", "ada", "team")
    add_token(tmp_path, "ci", "team", read_only=True)

    def token_command(*args):
        return subprocess.run(
            [SERVER, "token", "--tokens", path, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    listed = token_command("list")
    assert listed.returncode == 0
    assert listed.stdout == "ada\tread-write\tada,team\nci\tread-only\tteam\n"
    assert first not in listed.stdout + listed.stderr
    assert token_command("remove", "ci").returncode == 0
    assert token_command("list").stdout == "ada\tread-write\tada,team\n"
    missing = token_command("remove", "ci")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "no token named 'ci'" in missing.stderr


def test_http_tokens_from_the_environment(tmp_path):
    """$POOLSPLIT_MCP_TOKENS holds the file's JSON (a container's secret)."""
    token = add_token(tmp_path, "ada", "ada")
    document = (tmp_path / "tokens.json").read_text()
    (tmp_path / "tokens.json").unlink()
    os.environ["POOLSPLIT_MCP_TOKENS"] = document  # for the server process only
    try:
        both = subprocess.run(
            [SERVER, "--http", "127.0.0.1:0", "--db", tmp_path / "m.db"]
            + ["--tokens", tmp_path / "other.json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert both.returncode == 2 and "not both" in both.stderr
        with serve(tmp_path, tmp_path / "m.db") as server:
            assert rpc(server.base, "list", {})[0] == 401
            assert ok(rpc(server.base, "remember", {"content": "c"}, token))["id"]
    finally:
        del os.environ["POOLSPLIT_MCP_TOKENS"]
    assert len(exported(str(tmp_path / "m.db"), "ada", tmp_path)) == 1


# --- authentication -------------------------------------------------------------


def test_http_no_token_or_a_wrong_one_is_401_and_writes_nothing(tmp_path):
    good = add_token(tmp_path, "ada", "ada")
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", tmp_path / "tokens.json") as server:
        for token in (None, "psm_" + "x" * 43, good + "x", good[:-1], "", "ada"):
            status, body = rpc(server.base, "remember", {"content": "x"}, token)
            assert status == 401, (token, body)
            assert body == {
                "error": "invalid_token",
                "error_description": "Authentication required",
            }
            sent = dict(HEADERS)
            if token is not None:
                sent["authorization"] = f"Bearer {token}"
            status, headers, _ = request(server.base, "POST", "/mcp", b"{}", sent)
            assert status == 401
            assert headers["www-authenticate"].startswith(
                'Bearer error="invalid_token"'
            )
        # the right token works, and the access log holds neither it nor a body
        assert ok(rpc(server.base, "remember", {"content": "SECRET-1"}, good))["id"]
    log = server.stderr()  # complete once the server has stopped
    assert [e["content"] for e in exported(str(db), "ada", tmp_path).values()] == [
        "SECRET-1"
    ]
    assert good not in log and good[4:20] not in log and "SECRET-1" not in log
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    assert [x["status"] for x in lines if x["path"] == "/mcp"].count(401) == 12
    assert lines[-1]["tenant"] == "ada" and lines[-1]["namespace"] == "ada"
    assert set(lines[-1]) == {
        "time", "pid", "method", "path", "status", "ms", "in", "out", "tenant",
        "namespace", "tool", "id", "outcome",
    }  # fmt: skip
    assert lines[-1]["tool"] == "remember"  # the write: its tool, entry id, outcome
    assert lines[-1]["outcome"] == "ok"
    assert [lines[-1]["id"]] == list(exported(str(db), "ada", tmp_path))


def test_http_mcp_client_over_streamable_http(tmp_path):
    token = add_token(tmp_path, "ada", "ada", pin=True)  # it pins a correction
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", tmp_path / "tokens.json") as server:

        async def body():
            with anyio.fail_after(START):
                async with httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {token}"}
                ) as http_client:
                    transport = streamable_http_client(
                        f"{server.base}/mcp", http_client=http_client
                    )
                    async with Client(transport) as client:
                        tools = await client.list_tools()
                        assert {t.name for t in tools.tools} == TOOLS
                        written = await client.call_tool(
                            "remember",
                            {
                                "content": "Never deploy on Fridays.",
                                "type": "correction",
                                "scope": "always",
                            },
                        )
                        assert not written.is_error, written.content
                        recalled = await client.call_tool(
                            "recall", {"message": "deploy"}
                        )
                        assert "Never deploy on Fridays." in recalled.content[0].text
                        return written.structured_content["id"]

        ident = anyio.run(body)
    assert list(exported(str(db), "ada", tmp_path)) == [ident]


@pytest.mark.parametrize("ranking", ["lexical", "core"])
def test_http_tenant_stores_rank_as_the_ranking_flag_says(tmp_path, ranking):
    """--ranking reaches every tenant's store (explain shows the lexical
    relevance block only under the lexical ranking)."""
    db = tmp_path / "m.db"
    args = () if ranking == "lexical" else ("--ranking", ranking)
    with serve(tmp_path, db, *args) as server:
        ok(
            rpc(
                server.base,
                "remember",
                {"content": "deploy on Fridays", "type": "fact"},
            )
        )
        explained = ok(rpc(server.base, "explain", {"message": "deploy"}))["table"]
    assert ("relevance, score = base x" in explained) == (ranking == "lexical")


# --- tenants ----------------------------------------------------------------


def test_http_a_tenant_cannot_reach_another_namespace_with_any_tool(tmp_path):
    """A's token, B's namespace, B's ids and B's cursor, in every tool:
    refused or empty, nothing written, nothing of B's in any reply."""
    a = add_token(tmp_path, "a", "ns-a")
    b = add_token(tmp_path, "b", "ns-b")
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", tmp_path / "tokens.json") as server:
        url = server.base
        b_ids = [
            ok(rpc(url, "remember", {"content": f"SECRET-B {i}", "tags": ["b"]}, b))[
                "id"
            ]
            for i in range(3)
        ]
        b_cursor = ok(rpc(url, "list", {"limit": 1}, b))["next_cursor"]
        assert b_cursor is not None
        before_b = exported(str(db), "ns-b", tmp_path)
        calls = [
            ("remember", {"content": "from a"}),
            ("recall", {"message": "SECRET-B"}),
            ("get", {"id": b_ids[0]}),
            ("list", {}),
            ("list", {"cursor": b_cursor}),
            ("update", {"id": b_ids[0], "content": "overwritten by a"}),
            ("forget", {"id": b_ids[1]}),
            ("explain", {"message": "SECRET-B"}),
        ]
        replies = []
        for tool, arguments in calls:  # B's namespace named in the path
            for namespace in ("ns-b", "ns-b/", "NS-B", "ns-b%2F..", "ns-c"):
                status, body = rpc(url, tool, arguments, a, namespace=namespace)
                assert status in (403, 404), (tool, namespace, status, body)
                replies.append(body)
        status, body = rpc(url, "get", {"id": b_ids[0]}, a, namespace="ns-b")
        assert body["error"]["message"] == (
            "namespace 'ns-b' is not granted to this token"
        )
        status, body = rpc(url, "get", {"id": b_ids[0]}, a, namespace="ns-zzz")
        assert body["error"]["message"] == (
            "namespace 'ns-zzz' is not granted to this token"
        )  # the same answer whether the namespace exists or not
        # B's ids and cursor through A's own namespace: answered exactly as
        # an id nobody holds (so an answer cannot tell that B's exists)
        nobody = "0123456789abcdef"
        assert ok(rpc(url, "get", {"id": b_ids[0]}, a)) == {"entry": None}
        for tool, arguments in [
            ("update", {"id": "ID", "content": "x"}),
            ("remember", {"content": "y", "supersedes": "ID"}),
        ]:

            def with_id(ident, arguments=arguments):
                return {k: ident if v == "ID" else v for k, v in arguments.items()}

            refused = tool_error(rpc(url, tool, with_id(b_ids[2]), a))
            unknown = tool_error(rpc(url, tool, with_id(nobody), a))
            assert refused == unknown.replace(nobody, b_ids[2]), (refused, unknown)
            replies.append(refused)
        assert ok(rpc(url, "forget", {"id": b_ids[1]}, a))["forgotten"] is False
        listed = rpc(url, "list", {"cursor": b_cursor}, a)
        replies.append(listed)
        assert listed[1]["result"].get("structuredContent", {}).get("entries") in (
            None,
            [],
        )
        replies.append(
            ok(rpc(url, "recall", {"message": "SECRET-B", "tags": ["b"]}, a))
        )
        replies.append(rpc(url, "explain", {"message": "SECRET-B", "tags": ["b"]}, a))
        # an argument that names a namespace is refused before any tool runs
        for tool, arguments in calls:
            replies.append(
                tool_error(rpc(url, tool, {**arguments, "namespace": "ns-b"}, a))
            )
    log = server.stderr()
    text = json.dumps(replies)
    assert "SECRET-B" not in text and "overwritten" not in text
    assert exported(str(db), "ns-b", tmp_path) == before_b
    assert exported(str(db), "ns-a", tmp_path) == {}
    assert "SECRET-B" not in log


def test_http_read_only_token_reads_and_refuses_every_write(tmp_path):
    writer = add_token(tmp_path, "w", "team")
    reader = add_token(tmp_path, "r", "team", read_only=True)
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", tmp_path / "tokens.json") as server:
        url = server.base
        ident = ok(rpc(url, "remember", {"content": "team rule"}, writer))["id"]
        before = exported(str(db), "team", tmp_path)
        assert (
            ok(rpc(url, "get", {"id": ident}, reader))["entry"]["content"]
            == "team rule"
        )
        versions = ok(rpc(url, "history", {"id": ident}, reader))["versions"]
        assert [(v["operation"], v["by"]) for v in versions] == [("remember", "w")]
        assert (
            "team rule"
            in rpc(url, "recall", {"message": "team rule"}, reader)[1]["result"][
                "content"
            ][0]["text"]
        )
        for tool, arguments in [
            ("remember", {"content": "not allowed"}),
            ("update", {"id": ident, "content": "changed"}),
            ("forget", {"id": ident}),
        ]:
            message = tool_error(rpc(url, tool, arguments, reader))
            assert message == "namespace: 'team' is read-only for this token"
    assert exported(str(db), "team", tmp_path) == before


def test_http_a_token_of_several_namespaces_picks_one_by_path(tmp_path):
    token = add_token(tmp_path, "ada", "ada", "team")
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", tmp_path / "tokens.json") as server:
        mine = ok(rpc(server.base, "remember", {"content": "mine"}, token))["id"]
        ours = ok(
            rpc(server.base, "remember", {"content": "ours"}, token, namespace="team")
        )["id"]
    assert list(exported(str(db), "ada", tmp_path)) == [mine]  # /mcp: the first
    assert list(exported(str(db), "team", tmp_path)) == [ours]


VERIFIER = """
from mcp.server.auth.provider import AccessToken


class Verifier:  # an authorization server's tokens, introspected
    async def verify_token(self, token):
        if token == "carol-token":
            return AccessToken(token=token, client_id="carol",
                               scopes=["poolsplit-write:carol", "openid"],
                               resource="http://127.0.0.1/mcp")
        if token == "other-audience":
            return AccessToken(token=token, client_id="carol",
                               scopes=["poolsplit-write:carol"],
                               resource="http://elsewhere.example/mcp")
        return None
"""


@contextlib.contextmanager
def serve_verified(tmp_path, monkeypatch, module, source):
    """``--http`` with ``--token-verifier MODULE:Verifier`` (``source``
    written as MODULE.py beside the database, importable by the server
    process only, through its PYTHONPATH) and an issuer and resource URL."""
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with serve(
        tmp_path, tmp_path / "m.db", "--token-verifier", f"{module}:Verifier",
        "--issuer-url", "https://auth.example",
        "--resource-url", "http://127.0.0.1/mcp",
    ) as server:  # fmt: skip
        yield server


def test_http_a_real_authorization_servers_token_verifier_plugs_in(
    tmp_path, monkeypatch
):
    db = tmp_path / "m.db"
    with serve_verified(tmp_path, monkeypatch, "carol_auth", VERIFIER) as server:
        status, headers, _ = request(server.base, "POST", "/mcp", b"{}", HEADERS)
        assert status == 401
        assert headers["www-authenticate"].endswith(
            'resource_metadata="http://127.0.0.1/.well-known/'
            'oauth-protected-resource/mcp"'
        )
        status, _, data = request(
            server.base, "GET", "/.well-known/oauth-protected-resource/mcp"
        )
        assert status == 200
        metadata = json.loads(data)
        assert metadata["authorization_servers"] == ["https://auth.example"]
        assert metadata["resource"] == "http://127.0.0.1/mcp"
        for token in ("other-audience", "nobody"):
            assert rpc(server.base, "list", {}, token)[0] == 401
        ident = ok(rpc(server.base, "remember", {"content": "c"}, "carol-token"))
        status, _ = rpc(server.base, "list", {}, "carol-token", namespace="x")
        assert status == 403
    assert list(exported(str(db), "carol", tmp_path)) == [ident["id"]]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--token-verifier", "carol_auth:Verifier"], "go together"),
        (
            ["--token-verifier", "no_such_module:V", "--issuer-url", "https://a.example",
             "--resource-url", "http://127.0.0.1/mcp"],
            "ModuleNotFoundError",
        ),
        (
            ["--token-verifier", "carol_auth:Verifier", "--issuer-url", "not a url",
             "--resource-url", "http://127.0.0.1/mcp"],
            "issuer_url:",
        ),
    ],
)  # fmt: skip
def test_http_a_bad_token_verifier_exits_2_with_one_line(tmp_path, args, expected):
    (tmp_path / "carol_auth.py").write_text(VERIFIER)
    done = subprocess.run(
        [SERVER, "--http", "127.0.0.1:0", "--db", tmp_path / "m.db", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


# --- limits and checks --------------------------------------------------------


def test_http_oversize_request_is_413_with_the_limit_and_writes_nothing(tmp_path):
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--max-body-bytes", "4096") as server:
        status, body = rpc(server.base, "remember", {"content": "x" * 5000})
        assert status == 413
        assert body["error"]["message"] == (
            "request body too large: this server accepts at most 4096 bytes "
            "(poolsplit-mcp --max-body-bytes)"
        )

        # streamed without a length (chunked): the same answer
        def chunks():
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            yield b'"params": {"name": "remember", "arguments": {"content": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}}}'

        host, port = server.base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            conn.request("POST", "/mcp", body=chunks(), headers=HEADERS,
                         encode_chunked=True)  # fmt: skip
            response = conn.getresponse()
            assert response.status == 413
            assert (
                "at most 4096 bytes" in json.loads(response.read())["error"]["message"]
            )
        finally:
            conn.close()
        assert ok(rpc(server.base, "remember", {"content": "small"}))["id"]
    assert [e["content"] for e in exported(str(db), "default", tmp_path).values()] == [
        "small"
    ]


def test_http_host_and_origin_are_checked(tmp_path):
    with serve(tmp_path, tmp_path / "m.db") as server:
        status, _ = rpc(
            server.base, "list", {}, headers={"origin": "http://evil.example"}
        )
        assert status == 403
        status, _ = rpc(server.base, "list", {}, headers={"host": "evil.example"})
        assert status == 421
        status, _ = rpc(server.base, "list", {}, headers={"origin": server.base})
        assert status == 200


def test_http_allowed_host_names_what_clients_use(tmp_path):
    with serve(tmp_path, tmp_path / "m.db", "--allowed-host", "memory.example") as s:
        for headers in (
            {"host": "memory.example"},
            {"host": "memory.example:443", "origin": "https://memory.example"},
            {"host": "127.0.0.1:9", "origin": "http://localhost:3000"},
        ):
            assert rpc(s.base, "list", {}, headers=headers)[0] == 200, headers
        assert rpc(s.base, "list", {}, headers={"host": "other.example"})[0] == 421
        assert (
            rpc(s.base, "list", {}, headers={"origin": "https://x.example"})[0] == 403
        )
        # without tokens only --namespace is served
        status, body = rpc(s.base, "list", {}, namespace="someone")
        assert status == 403
        assert body["error"]["message"] == (
            "namespace 'someone' is not granted to this server (--namespace)"
        )


def test_http_healthz_reads_the_store(tmp_path):
    url, admin = create_pg_database()
    try:
        with serve(tmp_path, url) as server:
            status, _, data = request(server.base, "GET", "/healthz")
            assert status == 200 and json.loads(data)["status"] == "ok"
            drop_pg_database(url, admin)  # the database goes away under it
            status, _, data = request(server.base, "GET", "/healthz")
            assert status == 503, data
            answer = json.loads(data)
            assert answer["status"] == "unavailable"
            assert answer["error"] == "database unreachable"
        assert url.rsplit("/", 1)[1] in server.stderr()  # the whole line: stderr
    finally:
        drop_pg_database(url, admin)


# --- several workers ------------------------------------------------------------


def remember_acknowledged(base, token, content, key, deadline, gone):
    """The id once the server acknowledges it, retrying with the same key
    (at most 40 tries, until ``deadline``); None if it never did, or if the
    connection fails once ``gone`` is set (the server was stopped)."""
    for _ in range(40):
        if time.monotonic() > deadline:
            return None
        try:
            status, body = rpc(
                base, "remember", {"content": content, "key": key}, token
            )
        except (OSError, http.client.HTTPException):  # a worker died mid-request
            if gone.is_set():
                return None
            time.sleep(0.1)
            continue
        if status == 200 and not body["result"]["isError"]:
            return body["result"]["structuredContent"]["id"]
        assert status in (200, 502, 503), (status, body)
        text = body["result"]["content"][0]["text"] if status == 200 else ""
        assert status != 200 or "database is locked" in text, text
        time.sleep(0.1)
    return None


def write_concurrently(base, tenants, per_client, clients_per_tenant, during=None):
    """Clients of every tenant writing at once; returns {namespace: {key: id}}
    of acknowledged writes and {namespace: [keys tried]}."""
    acked = {namespace: {} for namespace, _ in tenants}
    tried = {namespace: [] for namespace, _ in tenants}
    lock = threading.Lock()
    deadline = time.monotonic() + 300
    errors = []
    gone = threading.Event()

    def client(namespace, token, number):
        try:
            for i in range(per_client):
                key = f"{namespace}-{number}-{i}"
                with lock:
                    tried[namespace].append(key)
                ident = remember_acknowledged(
                    base, token, f"entry {key}", key, deadline, gone
                )
                if ident is not None:
                    with lock:
                        acked[namespace][key] = ident
        except BaseException as exc:  # reported below, not lost in a thread
            errors.append(exc)

    threads = [
        threading.Thread(target=client, args=(namespace, token, n))
        for namespace, token in tenants
        for n in range(clients_per_tenant)
    ]
    for thread in threads:
        thread.start()
    if during is not None:
        during(acked, lock, gone)
    for thread in threads:
        thread.join(timeout=360)
        assert not thread.is_alive()
    assert not errors, errors[0]
    return acked, tried


def check_nothing_lost(url, acked, tried, tmp_path):
    for namespace, by_key in acked.items():
        stored = exported(url, namespace, tmp_path)
        # every acknowledged write is there, with its content
        for key, ident in by_key.items():
            assert stored[ident]["content"] == f"entry {key}"
        # a retried key stored one entry, and nothing came from elsewhere
        contents = [entry["content"] for entry in stored.values()]
        assert len(contents) == len(set(contents))
        assert set(contents) <= {f"entry {key}" for key in tried[namespace]}


def test_http_two_tenants_through_several_workers_lose_nothing(tmp_path, any_db):
    a = add_token(tmp_path, "a", "ns-a")
    b = add_token(tmp_path, "b", "ns-b")
    with serve(tmp_path, any_db, "--tokens", tmp_path / "tokens.json", workers=2) as s:
        acked, tried = write_concurrently(s.base, [("ns-a", a), ("ns-b", b)], 15, 3)
    assert sum(len(v) for v in acked.values()) == 90  # no worker died: all answered
    check_nothing_lost(any_db, acked, tried, tmp_path)


def test_http_sigkill_of_a_worker_under_load_loses_no_acknowledged_write(
    tmp_path, any_db
):
    a = add_token(tmp_path, "a", "ns-a")
    b = add_token(tmp_path, "b", "ns-b")
    killed = []
    with serve(tmp_path, any_db, "--tokens", tmp_path / "tokens.json", workers=2) as s:
        pids = sorted(worker_pids(s, 2))

        def kill_one_mid_load(acked, lock, gone):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # after some writes are in
                with lock:
                    if sum(len(v) for v in acked.values()) >= 20:
                        break
                time.sleep(0.05)
            os.kill(pids[0], signal.SIGKILL)  # one worker this test started
            killed.append(pids[0])

        acked, tried = write_concurrently(
            s.base, [("ns-a", a), ("ns-b", b)], 20, 3, during=kill_one_mid_load
        )
        after = worker_pids(s, 2)  # the supervisor replaced the dead worker
        assert pids[0] not in after or len(pids) == 1
        assert ok(rpc(s.base, "list", {"limit": 1}, a))["entries"]
    assert killed
    assert sum(len(v) for v in acked.values()) > 20
    check_nothing_lost(any_db, acked, tried, tmp_path)


def test_http_sigterm_lets_in_flight_writes_finish(tmp_path):
    db = tmp_path / "m.db"
    with serve(tmp_path, db) as server:

        def stop_mid_load(acked, lock, gone):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                with lock:
                    if len(acked["default"]) >= 10:
                        break
                time.sleep(0.02)
            gone.set()
            server.proc.send_signal(signal.SIGTERM)

        acked, tried = write_concurrently(
            server.base, [("default", None)], 30, 4, during=stop_mid_load
        )
        # uvicorn re-raises the SIGTERM it handled once it has shut down
        assert server.proc.wait(timeout=120) in (0, -signal.SIGTERM)
        assert "Application shutdown complete" in server.stderr()
    check_nothing_lost(str(db), acked, tried, tmp_path)
    assert len(acked["default"]) >= 10


# --- process hygiene (issue 36) -------------------------------------------------


def gone(pid):
    """True once ``pid`` no longer runs (exited, or a zombie nobody reaps)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def children(pid):
    """The pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text(encoding="ascii").rpartition(")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.parent.name))
    return found


def test_http_workers_exit_when_their_supervisor_is_sigkilled(tmp_path):
    """No orphan keeps serving (and the port) after a SIGKILL of the
    supervisor: a new server binds the same port."""
    db = tmp_path / "m.db"
    workers = []
    try:
        with serve(tmp_path, db, workers=2) as server:
            # its children: the two workers (and multiprocessing's helper);
            # /healthz may show only one worker, the one the kernel picks
            assert until(lambda: len(children(server.proc.pid)) >= 2)
            workers = sorted(children(server.proc.pid))
            assert set(worker_pids(server, 1)) <= set(workers)
            port = server.base.rpartition(":")[2]
            os.kill(server.proc.pid, signal.SIGKILL)  # the supervisor we started
            server.proc.wait(timeout=60)
            for _ in range(600):  # bounded: 60 s at most
                if all(gone(pid) for pid in workers):
                    break
                time.sleep(0.1)
            assert [pid for pid in workers if not gone(pid)] == []
        assert "supervisor" in server.stderr() and "is gone" in server.stderr()
        with serve(tmp_path, db, address=f"127.0.0.1:{port}") as again:
            assert again.base.endswith(f":{port}")
            assert ok(rpc(again.base, "remember", {"content": "after"}))["id"]
    finally:
        for pid in workers:  # orphans this test made, if the check failed
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_http_workers_start_with_two_thousand_token_records(tmp_path, monkeypatch):
    """The workers' configuration is handed over in a file (0600, removed when
    the server stops): in one environment variable, 2,000 token records
    (about 300 KiB) passed Linux's 128 KiB cap and no worker ever started."""
    token = add_token(tmp_path, "ada", "ada")
    path = tmp_path / "tokens.json"
    document = json.loads(path.read_text())
    document["tokens"] += [
        {
            "name": f"tenant-{n}",
            "sha256": f"{n:064x}",
            "namespaces": [f"tenant-{n}", "team-with-a-longish-name"],
            "read_only": False,
        }
        for n in range(2000)
    ]
    path.write_text(json.dumps(document))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the server's temporary folder
    with serve(tmp_path, tmp_path / "m.db", "--tokens", path, workers=2) as server:
        assert ok(rpc(server.base, "remember", {"content": "many tenants"}, token))
        (config,) = temp.glob("poolsplit-mcp-*/config.json")
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert len(json.loads(config.read_text())["tokens"]) == 2001
    assert list(temp.glob("poolsplit-mcp-*")) == []


# --- the runtime file (issue 51) ---------------------------------------------

PASSWORD = "pw-never-on-disk-51"


def with_password(url):
    """``url`` with a password for its user (trust authentication ignores
    it; what matters is that no runtime file ever holds it)."""
    head, at, tail = url.partition("@")
    assert at and ":" not in head.partition("//")[2], url
    return f"{head}:{PASSWORD}{at}{tail}"


def runtime_files(temp):
    """The runtime folders in ``temp`` and what each holds."""
    return {
        folder.name: sorted(p.name for p in folder.iterdir())
        for folder in temp.glob("poolsplit-mcp-*")
    }


@contextmanager
def runtime_server(tmp_path, monkeypatch, pg_db, workers):
    """A served database whose URL holds a password, the temporary folder
    its own (returned), after checking the runtime file while it serves:
    mode 0600 in a folder of mode 0700, token digests, no password."""
    token = add_token(tmp_path, "ada", "ada")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    url = with_password(pg_db)
    args = ["--tokens", tmp_path / "tokens.json", "--read-db", url]
    with serve(tmp_path, url, *args, workers=workers) as server:
        assert ok(rpc(server.base, "remember", {"content": "kept"}, token))["id"]
        (folder,) = temp.glob("poolsplit-mcp-*")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert [p.name for p in folder.iterdir()] == ["config.json"]
        config = folder / "config.json"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        text = config.read_text()
        assert PASSWORD not in text and token not in text
        assert json.loads(text)["tokens"][0]["name"] == "ada"
        yield server, temp
    assert PASSWORD not in server.stderr()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_http_runtime_file_is_removed_on_sigterm_and_sigint(
    tmp_path, monkeypatch, pg_db, signum, workers
):
    """One worker too: uvicorn raised the SIGTERM again by its default
    action, which ended the process before any cleanup (6 of 6 left it)."""
    with runtime_server(tmp_path, monkeypatch, pg_db, workers) as (server, temp):
        server.proc.send_signal(signum)
        status = server.proc.wait(timeout=120)
    assert status in (0, -signum), server.stderr()
    assert "Traceback" not in server.stderr()
    assert runtime_files(temp) == {}


def test_http_runtime_file_is_removed_on_a_normal_exit(tmp_path, monkeypatch):
    """A server that cannot bind its port returns 2: the runtime file,
    written before the bind, is gone."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    with serve(tmp_path, tmp_path / "m.db") as server:
        port = server.base.rpartition(":")[2]
        done = subprocess.run(
            [SERVER, "--http", f"127.0.0.1:{port}", "--db", tmp_path / "m.db"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "cannot bind" in done.stderr
        assert len(runtime_files(temp)) == 1  # the running server's only
    assert runtime_files(temp) == {}


@pytest.mark.parametrize("workers", [1, 2])
def test_http_a_sigkill_leaves_at_most_a_runtime_file_without_secrets(
    tmp_path, monkeypatch, pg_db, workers
):
    with runtime_server(tmp_path, monkeypatch, pg_db, workers) as (server, temp):
        orphans = children(server.proc.pid)
        server.proc.kill()
        server.proc.wait(timeout=60)
        assert until(lambda: all(gone(pid) for pid in orphans))
    left = list(temp.glob("poolsplit-mcp-*/*"))
    assert [p.name for p in left] == ["config.json"]
    assert PASSWORD not in left[0].read_text()


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_http_get_and_delete_on_mcp_are_405_not_a_stream(tmp_path, method):
    token = add_token(tmp_path, "ada", "ada")
    with serve(tmp_path, tmp_path / "m.db", "--tokens", tmp_path / "tokens.json") as s:
        for path, auth in (("/mcp", None), ("/mcp/ada", token)):
            headers = {"accept": "text/event-stream"}
            if auth is not None:
                headers["authorization"] = f"Bearer {auth}"
            # a stream that never ends would time out here (the test fails)
            status, got, data = request(
                s.base, method, path, headers=headers, timeout=20
            )
            assert status == 405, (path, data)
            assert got["allow"] == "POST"
            error = json.loads(data)
            assert error["id"] is None and error["error"]["code"] == -32600
            assert "stateless" in error["error"]["message"]


def raw_connection(base, timeout=30):
    import socket

    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def dribble(sock, first, byte, tries=150, pause=0.2):
    """Send ``first``, then ``byte`` every ``pause`` s (at most ``tries``),
    until the server answers or closes; what it sent (b"" if it closed
    without a word), or None if it never did."""
    import select

    sock.sendall(first)
    for _ in range(tries):
        ready, _, _ = select.select([sock], [], [], pause)
        if ready:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                return b""
            while data and b"\r\n\r\n" in data and not data.endswith(b"}"):
                more = sock.recv(65536)
                if not more:
                    break
                data += more
            return data
        try:
            sock.sendall(byte)
        except (BrokenPipeError, ConnectionResetError):
            return b""
    return None


def test_http_a_client_dribbling_its_headers_is_cut(tmp_path):
    with serve(tmp_path, tmp_path / "m.db", "--header-timeout", "1") as server:
        with raw_connection(server.base) as sock:
            got = dribble(sock, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ", b"a")
        assert got is not None, "the server held the connection for 30 s"
        assert got.startswith(b"HTTP/1.1 408 "), got
        assert b"--header-timeout" in got
        with raw_connection(server.base) as sock:  # silent: closed, no answer
            assert dribble(sock, b"", b"") == b""
        assert ok(rpc(server.base, "list", {}))["entries"] == []  # still serving


def test_http_a_client_dribbling_its_body_is_cut_with_408(tmp_path):
    with serve(tmp_path, tmp_path / "m.db", "--body-timeout", "1") as server:
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Length: 1000\r\n\r\n"
        )
        with raw_connection(server.base) as sock:
            got = dribble(sock, head + b'{"jsonrpc": "2.0", ', b" ")
        assert got is not None, "the server held the connection for 30 s"
        assert got.startswith(b"HTTP/1.1 408 "), got
        body = json.loads(got.partition(b"\r\n\r\n")[2])
        assert body["error"]["message"] == (
            "request body not received within 1 s (poolsplit-mcp --body-timeout)"
        )
        assert ok(rpc(server.base, "list", {}))["entries"] == []


def test_http_a_connection_past_max_connections_is_refused_503(tmp_path):
    args = ("--max-connections", "2", "--header-timeout", "120")
    with serve(tmp_path, tmp_path / "m.db", *args) as server:
        held = [raw_connection(server.base) for _ in range(2)]
        try:
            statuses = []
            for _ in range(50):  # until the worker has seen both held ones
                status, _, data = request(server.base, "GET", "/healthz", timeout=20)
                statuses.append(status)
                if status == 503:
                    break
                time.sleep(0.1)
            assert statuses[-1] == 503, statuses
            assert b"at most 2 (poolsplit-mcp --max-connections)" in data
            for sock in held:  # the two within the cap are served
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in held:
                sock.close()
        statuses = []
        for _ in range(50):  # the held ones closed: served again
            status, _, _ = request(server.base, "GET", "/healthz", timeout=20)
            statuses.append(status)
            if status == 200:
                break
            time.sleep(0.1)
        assert statuses[-1] == 200, statuses


@pytest.mark.parametrize(
    "ident",
    [{"a": 1}, [1], None, 1.5, True],
    ids=["object", "array", "null", "fraction", "boolean"],
)
def test_http_a_request_with_an_unanswerable_id_gets_32600(tmp_path, ident):
    with serve(tmp_path, tmp_path / "m.db") as server:
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
        status, _, data = request(server.base, "POST", "/mcp", body.encode(), HEADERS)
        assert status == 400, data
        reply = json.loads(data)
        assert reply["id"] is None and reply["error"]["code"] == -32600, reply
        assert "id must be a string or an integer" in reply["error"]["message"]
        # a notification (no id member) is still accepted with 202
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert request(server.base, "POST", "/mcp", note.encode(), HEADERS)[0] == 202


def test_http_access_log_lines_are_written_in_one_system_call(monkeypatch):
    """Each line and its newline go to fd 2 in one write(2): two workers
    sharing stderr then never merge lines (``}{``)."""
    from poolsplit_memory import _http

    calls = []
    real = os.write

    def recording(fd, data):
        if fd == 2:
            calls.append(bytes(data))
            return len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", recording)

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
    anyio.run(_http._AccessLog(app), scope, receive, send)
    assert len(calls) == 1, calls
    assert calls[0].endswith(b"}\n") and calls[0].count(b"\n") == 1
    line = json.loads(calls[0])
    assert line["status"] == 204 and line["path"] == "/mcp"


def test_http_access_log_line_is_whole_after_a_partial_write(monkeypatch):
    """A write(2) the kernel takes only part of is continued with the rest
    (never a line cut short, never one repeated)."""
    from poolsplit_memory import _http

    taken = []
    real = os.write

    def partial(fd, data):
        if fd == 2:
            part = bytes(data[: max(1, len(data) // 3)])
            taken.append(part)
            return len(part)
        return real(fd, data)

    monkeypatch.setattr(os, "write", partial)
    _http._write_line('{"path": "/mcp", "status": 200}')
    assert b"".join(taken) == b'{"path": "/mcp", "status": 200}\n'
    assert len(taken) > 1


def test_http_workers_access_log_holds_one_object_per_line(tmp_path):
    a = add_token(tmp_path, "a", "ns-a")
    with serve(tmp_path, tmp_path / "m.db", "--tokens", tmp_path / "tokens.json",
               workers=2) as s:  # fmt: skip
        acked, _ = write_concurrently(s.base, [("ns-a", a)], 10, 4)
    assert len(acked["ns-a"]) == 40
    lines = [x for x in s.stderr().splitlines() if x.startswith("{")]
    assert len(lines) >= 40
    for line in lines:
        assert json.loads(line)["path"]  # one whole object per line, no "}{"


def test_http_each_request_writes_its_json_access_line_and_nothing_else(tmp_path):
    """Issue 52: the SDK also wrote a plain-text ``Terminating session: None``
    per request. What a request writes on stderr is its one JSON line: the
    lines that are not JSON (start and stop) do not grow with the requests."""

    def plain_lines(requests):
        with serve(tmp_path, tmp_path / "m.db", healthz=False) as s:
            for number in range(requests):
                ok(rpc(s.base, "remember", {"content": f"note {number}"}))
        lines = s.stderr().splitlines()
        json_lines = [x for x in lines if x.startswith("{")]
        assert len(json_lines) == requests, lines
        return [x for x in lines if not x.startswith("{")]

    few, more = plain_lines(1), plain_lines(4)
    assert not any("Terminating session" in x for x in few + more), more
    assert len(more) == len(few), (few, more)


# --- what tenants and operators see (issue 36) ----------------------------------


def test_http_a_tool_error_names_the_cause_not_the_database(tmp_path):
    """In a store that is open (a call fails) and in one the worker has not
    opened yet (the open fails): the cause and the namespace, no more."""
    url, admin = create_pg_database()
    token = add_token(tmp_path, "ada", "ada", "team")
    name = url.rsplit("/", 1)[1]
    try:
        with serve(tmp_path, url, "--tokens", tmp_path / "tokens.json") as server:
            assert ok(rpc(server.base, "remember", {"content": "before"}, token))
            drop_pg_database(url, admin)  # the database goes away under it
            texts = [
                (namespace, tool_error(rpc(server.base, tool, arguments, token,
                                           namespace=namespace)))
                for tool, arguments in [
                    ("remember", {"content": "during"}),
                    ("recall", {"message": "before"}),
                    ("list", {}),
                ]
                for namespace in ("ada", "team")  # team: never opened
            ]  # fmt: skip
        for namespace, text in texts:
            cause, _, where = text.partition(": ")
            assert where == f"namespace {namespace!r}", text
            assert cause in ("database unreachable", "database error"), text
            assert name not in text and "postgresql" not in text
            assert "socket" not in text and "@" not in text
        assert name in server.stderr()  # the operator's log keeps the database
    finally:
        drop_pg_database(url, admin)


def test_http_a_store_that_cannot_open_names_the_cause_not_the_path(tmp_path):
    """The first call of a namespace opens its store; when that open fails
    (the folder is gone) the tenant reads the cause and the namespace, and
    only the operator's log names the path."""
    folder = tmp_path / "data-folder-x7"
    folder.mkdir()
    token = add_token(tmp_path, "ada", "ada")
    tokens = tmp_path / "tokens.json"
    with serve(tmp_path, folder / "m.db", "--tokens", tokens, healthz=False) as s:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()  # before the worker opened its store
        text = tool_error(rpc(s.base, "list", {}, token))
    cause, _, where = text.partition(": ")
    assert where == "namespace 'ada'", text
    assert cause and "data-folder-x7" not in text, text
    assert "data-folder-x7" in s.stderr()  # the operator's log keeps the path


def test_http_a_403_is_logged_with_the_tokens_name(tmp_path):
    token = add_token(tmp_path, "ada", "ada")
    with serve(tmp_path, tmp_path / "m.db", "--tokens", tmp_path / "tokens.json") as s:
        assert rpc(s.base, "list", {}, token, namespace="team")[0] == 403
    lines = [json.loads(x) for x in s.stderr().splitlines() if x.startswith("{")]
    (refused,) = [x for x in lines if x["status"] == 403]
    assert refused["tenant"] == "ada" and refused["namespace"] == "team"
    assert token not in s.stderr()


@pytest.mark.parametrize(
    "where",
    [["token", "{c}", "--tokens", "{f}"], ["token", "--tokens", "{f}", "{c}"],
     ["--tokens", "{f}", "token", "{c}"], ["--tokens={f}", "token", "{c}"]],
    ids=["after", "before-command", "before-token", "equals"],
)  # fmt: skip
def test_http_token_commands_take_tokens_anywhere(tmp_path, where):
    path = tmp_path / "tokens.json"

    def command(*words):
        args = []
        for part in where:
            if part == "{c}":
                args += words
            else:
                args.append(part.replace("{f}", str(path)))
        return subprocess.run(
            [SERVER, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")},
        )

    added = command("add", "ada", "--namespace", "ada")
    assert added.returncode == 0, added.stderr
    assert re.fullmatch(r"psm_[A-Za-z0-9_-]{43}\n", added.stdout)
    assert command("list").stdout == "ada\tread-write\tada\n"
    assert command("remove", "ada").returncode == 0
    assert command("list").stdout == ""
    assert not (tmp_path / "config").exists()  # the default file: untouched


def until(check, tries=300, pause=0.1):
    """``check()``'s last value once it is truthy (at most ``tries`` calls)."""
    value = None
    for _ in range(tries):
        value = check()
        if value:
            return value
        time.sleep(pause)
    return value


def test_http_tokens_file_is_reloaded_when_it_changes(tmp_path):
    ada = add_token(tmp_path, "ada", "ada")
    path = tmp_path / "tokens.json"
    # one worker: which worker a request reaches is the kernel's choice, and
    # each worker reloads on its own (a worker no request reached between
    # two versions of the file keeps the older one while the file is broken)
    with serve(tmp_path, tmp_path / "m.db", "--tokens", path) as s:
        assert ok(rpc(s.base, "list", {}, ada))["entries"] == []
        bob = add_token(tmp_path, "bob", "bob")
        assert until(lambda: all(rpc(s.base, "list", {}, bob)[0] == 200
                                 for _ in range(6)))  # fmt: skip
        done = subprocess.run(
            [SERVER, "token", "remove", "ada", "--tokens", path],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert until(lambda: all(rpc(s.base, "list", {}, ada)[0] == 401
                                 for _ in range(6)))  # fmt: skip
        # a broken file keeps the last good tokens in force, and says so
        path.write_text("{")
        # (each worker looks at the file when a request needs a token)
        assert until(
            lambda: (
                rpc(s.base, "list", {}, bob)[0] == 200
                and "tokens not reloaded" in s.stderr()
            )
        )
        assert rpc(s.base, "list", {}, bob)[0] == 200
        assert rpc(s.base, "list", {}, ada)[0] == 401


def test_http_tokens_replaced_at_the_same_size_and_mtime_take_effect(tmp_path):
    """Served: a tokens file rewritten in place with the same size and
    modification time refuses the old token and accepts the new one; then
    an emptied file refuses every token."""
    path = tmp_path / "tokens.json"
    path.write_text(tokens_document("ada"))
    with serve(tmp_path, tmp_path / "m.db", "--tokens", path) as s:
        assert ok(rpc(s.base, "list", {}, "psm_ada"))["entries"] == []
        rewrite_in_place_keeping_size_and_mtime(path, tokens_document("bob"))
        assert until(lambda: rpc(s.base, "list", {}, "psm_ada")[0] == 401)
        assert ok(rpc(s.base, "list", {}, "psm_bob"))["entries"] == []
        path.write_text("")
        assert until(lambda: rpc(s.base, "list", {}, "psm_bob")[0] == 401)
        assert rpc(s.base, "list", {}, "psm_ada")[0] == 401
    assert "tokens not reloaded" not in s.stderr()


def test_http_store_warnings_on_a_misleading_priority_reach_the_client(tmp_path):
    """remember and update answer with the store's base_priority warning,
    and the value is stored (issue 51: a warning, not a refusal)."""
    with serve(tmp_path, tmp_path / "m.db") as s:
        written = ok(rpc(s.base, "remember", {"content": "c", "base_priority": 1e300}))
        (warning,) = written["warnings"]
        assert warning.startswith("base_priority: 1e+300 is above 1,000,000")
        updated = ok(rpc(s.base, "update", {"id": written["id"], "base_priority": -5}))
        (warning,) = updated["warnings"]
        assert warning.startswith("base_priority: -5 is at or below 0")
        assert updated["entry"]["base_priority"] == -5


def test_http_a_read_only_tokens_tools_list_has_only_reading_tools(tmp_path):
    writer = add_token(tmp_path, "w", "team")
    reader = add_token(tmp_path, "r", "team", read_only=True)
    with serve(tmp_path, tmp_path / "m.db", "--tokens", tmp_path / "tokens.json") as s:

        def listed(token):
            sent = {**HEADERS, "authorization": f"Bearer {token}"}
            body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            status, _, data = request(s.base, "POST", "/mcp", body.encode(), sent)
            assert status == 200, data
            return {tool["name"] for tool in json.loads(data)["result"]["tools"]}

        assert listed(writer) == TOOLS
        assert listed(reader) == {"recall", "get", "history", "list", "explain"}


# --- boundaries the mutants of issue 36 crossed -----------------------------------


EMPTY_TOKENS = '{"version": 1, "tokens": []}'


@pytest.mark.parametrize("source", ["file", "environment"])
@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "[::]"])
def test_http_an_empty_token_list_off_loopback_exits_2(tmp_path, host, source):
    (tmp_path / "tokens.json").write_text(EMPTY_TOKENS)
    args, env = [], dict(os.environ)
    if source == "file":
        args = ["--tokens", tmp_path / "tokens.json"]
    else:
        env["POOLSPLIT_MCP_TOKENS"] = EMPTY_TOKENS
    done = subprocess.run(
        [SERVER, "--http", f"{host}:8765", "--db", tmp_path / "m.db", *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "holds no token, so no one could connect" in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_http_an_empty_token_list_on_loopback_lets_no_one_in(tmp_path):
    """An empty list is tokens given (every request 401), never "no tokens"
    (which would serve --namespace to anyone); a token added later works."""
    path = tmp_path / "tokens.json"
    path.write_text(EMPTY_TOKENS)
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--tokens", path) as s:
        assert rpc(s.base, "remember", {"content": "anonymous"})[0] == 401
        assert rpc(s.base, "list", {}, "psm_" + "x" * 43)[0] == 401
        ada = add_token(tmp_path, "ada", "ada")
        assert until(lambda: rpc(s.base, "list", {}, ada)[0] == 200)
    assert exported(str(db), "default", tmp_path) == {}


def test_http_tokens_a_read_grant_beside_a_write_grant_stays_read_only():
    from poolsplit_memory._tokens import Grant, grants_from_scopes

    assert grants_from_scopes(["poolsplit-write:carol", "poolsplit-read:team"]) == {
        "carol": Grant(True),
        "team": Grant(False),
    }
    for scopes in (
        ["poolsplit-write:team", "poolsplit-read:team"],
        ["poolsplit-read:team", "poolsplit-write:team"],
    ):  # the order of the two grants for one namespace decides nothing
        assert grants_from_scopes(scopes) == {"team": Grant(True)}


MIXED_VERIFIER = """
from mcp.server.auth.provider import AccessToken


class Verifier:
    async def verify_token(self, token):
        scopes = {
            "mixed": ["poolsplit-write:carol", "poolsplit-read:team"],
            "mixed-reversed": ["poolsplit-read:team", "poolsplit-write:carol"],
            "both-orders": ["poolsplit-read:team", "poolsplit-write:team"],
        }.get(token)
        if scopes is None:
            return None
        return AccessToken(token=token, client_id=token, scopes=scopes,
                           resource="http://127.0.0.1/mcp")
"""


def test_http_a_read_scope_beside_a_write_scope_cannot_write(tmp_path, monkeypatch):
    """``poolsplit-write:carol`` and ``poolsplit-read:team``: carol is
    writable, team is not (whatever the scopes' order); a write and a read
    scope for one namespace make it writable in either order."""
    db = tmp_path / "m.db"
    with serve_verified(tmp_path, monkeypatch, "mixed_auth", MIXED_VERIFIER) as s:
        for token in ("mixed", "mixed-reversed"):
            assert (
                tool_error(
                    rpc(
                        s.base,
                        "remember",
                        {"content": "x"},
                        token,
                        namespace="team",
                    )
                )
                == "namespace: 'team' is read-only for this token"
            )
            assert ok(
                rpc(s.base, "remember", {"content": token}, token, namespace="carol")
            )["id"]
        assert ok(
            rpc(
                s.base,
                "remember",
                {"content": "t"},
                "both-orders",
                namespace="team",
            )
        )["id"]
    assert [e["content"] for e in exported(str(db), "team", tmp_path).values()] == ["t"]


def body_of_size(size):
    """A tools/call remember whose JSON body is exactly ``size`` bytes."""

    def body(content):
        return json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "remember", "arguments": {"content": content}},
            }
        ).encode()

    padded = body("x" * (size - len(body(""))))
    assert len(padded) == size
    return padded


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_http_a_body_of_exactly_max_body_bytes_is_served(tmp_path, chunked):
    db = tmp_path / "m.db"
    with serve(tmp_path, db, "--max-body-bytes", "4096") as server:
        host, port = server.base.removeprefix("http://").split(":")
        statuses = []
        for size in (4096, 4097):
            body = body_of_size(size)
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            try:
                if chunked:
                    parts = (body[i : i + 1000] for i in range(0, len(body), 1000))
                    conn.request("POST", "/mcp", body=parts, headers=HEADERS,
                                 encode_chunked=True)  # fmt: skip
                else:
                    conn.request("POST", "/mcp", body=body, headers=HEADERS)
                response = conn.getresponse()
                statuses.append(response.status)
                reply = json.loads(response.read())
            finally:
                conn.close()
            if size == 4096:
                assert not reply["result"]["isError"], reply
        assert statuses == [200, 413]
    (entry,) = exported(str(db), "default", tmp_path).values()
    sent = json.loads(body_of_size(4096))["params"]["arguments"]["content"]
    assert entry["content"] == sent


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("192.0.2.1", "192.0.2.1"), ("memory.example", "memory.example"),
     ("2001:db8::1", "[2001:db8::1]"), ("0.0.0.0", None), ("::", None)],
)  # fmt: skip
def test_http_a_bound_address_is_an_allowed_host_unless_a_wildcard(host, allowed):
    from poolsplit_memory._http import HttpConfig, _security

    settings = _security(HttpConfig(url="m.db", host=host))
    loopback = {"127.0.0.1", "localhost", "[::1]"}
    hosts = set(settings.allowed_hosts)
    expected = loopback | ({allowed} if allowed else set())
    assert hosts == expected | {f"{h}:*" for h in expected}
    assert set(settings.allowed_origins) == {
        f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts
    }
    assert settings.enable_dns_rebinding_protection is True


def test_http_flag_defaults_are_the_modules_defaults():
    """poolsplit-mcp's flags (parsed without importing the HTTP stack) say
    the defaults _http documents and uses."""
    from poolsplit_memory import _http
    from poolsplit_memory._args import build_parser as _parser

    parser = _parser()
    assert parser.get_default("header_timeout") == _http.DEFAULT_HEADER_TIMEOUT
    assert parser.get_default("body_timeout") == _http.DEFAULT_BODY_TIMEOUT
    assert parser.get_default("max_connections") == _http.DEFAULT_MAX_CONNECTIONS
    assert parser.get_default("max_body_bytes") == _http.DEFAULT_MAX_BODY
