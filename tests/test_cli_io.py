"""The command line's input and output: never a traceback.

Pipes closed early, a full disk, non-UTF-8 stdin and devices that never end
were tracebacks (SECURITY.md promises one line and exit 0, 1 or 2).
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import poolsplit
from poolsplit import load_pools, main, read_text

ROOT = Path(__file__).resolve().parent.parent
STORE = b'{"id": "a", "type": "task", "content": "ship it"}\n'
POOLS = b'[{"name": "work", "max_tokens": 50, "max_entries": 2}]'


def poolsplit_cli(*argv, cwd, **options):
    """Run the command line in a subprocess; return (status, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "poolsplit.py"), *argv],
        cwd=cwd,
        capture_output="stdout" not in options,
        stderr=subprocess.PIPE if "stdout" in options else None,
        check=False,
        **options,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.jsonl").write_bytes(STORE)
    (tmp_path / "p.json").write_bytes(POOLS)
    return tmp_path


RETRIEVE = ["retrieve", "s.jsonl", "--pools", "p.json", "--now", "2026-01-01"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([*RETRIEVE, "--format", "json"], 0),
        (["validate", "s.jsonl"], 0),
        (["validate", "bad.jsonl"], 1),
        (["demo"], 0),
        (["--help"], 0),
        (["retrieve", "--help"], 0),
    ],
)
def test_a_closed_pipe_ends_quietly(files, argv, expected):
    """`poolsplit retrieve ... --format json | true`: BrokenPipeError traceback."""
    (files / "bad.jsonl").write_bytes(b'{"id": 1, "status": "Active"}\n')
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        status, _, err = poolsplit_cli(*argv, cwd=files, stdout=write_end)
    finally:
        os.close(write_end)
    assert (status, err) == (expected, b"")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_one_line(files):
    with open("/dev/full", "wb") as full:
        status, _, err = poolsplit_cli(*RETRIEVE, cwd=files, stdout=full)
    assert status == 2
    assert err == (
        b"poolsplit: error: cannot write the output: [Errno 28] No space left on "
        b"device\n"
    )


@pytest.mark.parametrize("where", ["stdin", "file"])
def test_non_utf8_input_is_one_line_from_stdin_as_from_a_file(files, where):
    """Non-UTF-8 stdin raised UnicodeDecodeError; the same file was one line."""
    data = b'{"id": "\xff"}\n'
    (files / "bad.jsonl").write_bytes(data)
    path = "-" if where == "stdin" else "bad.jsonl"
    status, out, err = poolsplit_cli("validate", path, cwd=files, input=data)
    name = b"<stdin>" if where == "stdin" else b"bad.jsonl"
    assert (status, out) == (2, b"")
    assert err == (
        b"poolsplit: error: " + name + b": cannot read: 'utf-8' codec can't decode "
        b"byte 0xff in position 8: invalid start byte\n"
    )


@pytest.mark.parametrize("where", ["stdin", "file"])
def test_a_byte_order_mark_is_accepted_on_stdin_as_in_a_file(files, where):
    data = b"\xef\xbb\xbf" + STORE
    (files / "bom.jsonl").write_bytes(data)
    argv = ["-" if where == "stdin" else "bom.jsonl", "--pools", "p.json"]
    status, out, err = poolsplit_cli(
        "retrieve", *argv, "--now", "2026-01-01", cwd=files, input=data
    )
    assert (status, out, err) == (0, b"## work\n- [a] ship it\n", b"")


@pytest.mark.parametrize(
    ("device", "argv"),
    [
        ("/dev/zero", ["validate", "/dev/zero"]),
        ("/dev/urandom", ["retrieve", "s.jsonl", "--pools", "/dev/urandom"]),
        (
            "/dev/zero",
            ["audit", "s.jsonl", "--pools", "p.json", "--queries", "/dev/zero"],
        ),
    ],
)
def test_a_device_that_never_ends_is_read_up_to_the_limit(files, device, argv):
    """/dev/zero was read until MemoryError (7.5 GB after 20 s)."""
    if not os.path.exists(device):
        pytest.skip(f"needs {device}")
    status, out, err = poolsplit_cli(*argv, "--max-bytes", "5000", cwd=files)
    assert (status, out) == (2, b"")
    assert (
        err
        == (
            f"poolsplit: error: {device}: cannot read: more than 5000 bytes; pass a "
            f"larger max_bytes (--max-bytes) to read it\n"
        ).encode()
    )


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_the_default_limit_stops_dev_zero(files):
    status, out, err = poolsplit_cli("validate", "/dev/zero", cwd=files)
    assert (status, out) == (2, b"")
    assert err == (
        b"poolsplit: error: /dev/zero: cannot read: more than 268435456 bytes; "
        b"pass a larger max_bytes (--max-bytes) to read it\n"
    )


def test_a_file_of_exactly_the_limit_is_read(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"[1, 2]")
    assert read_text(str(path), max_bytes=6) == "[1, 2]"
    with pytest.raises(ValueError, match="more than 5 bytes"):
        read_text(str(path), max_bytes=5)
    with pytest.raises(ValueError, match="more than 5 bytes"):
        load_pools(str(path), max_bytes=5)


@pytest.mark.parametrize("value", ["0", "-3", "many", "1.5"])
def test_max_bytes_must_be_a_positive_int(files, capsys, monkeypatch, value):
    monkeypatch.chdir(files)
    assert main(["validate", "s.jsonl", "--max-bytes", value]) == 2
    assert capsys.readouterr().err == (
        f"poolsplit: error: argument --max-bytes: must be a positive int, "
        f"got {value!r}\n"
    )


def test_stdin_that_is_not_a_byte_stream(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    monkeypatch.setattr(sys, "stdin", None)  # started with stdin closed
    assert main(["validate", "-"]) == 2
    assert capsys.readouterr().err == (
        "poolsplit: error: <stdin>: cannot read: standard input is not readable\n"
    )


class Failing(io.StringIO):
    """A stdout whose writes fail, with a real descriptor (a temp file)."""

    def __init__(self, error, descriptor):
        super().__init__()
        self.error = error
        self.descriptor = descriptor

    def write(self, text):
        raise self.error

    def fileno(self):
        return self.descriptor


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (BrokenPipeError(32, "Broken pipe"), 0, ""),
        (
            OSError(28, "No space left on device"),
            2,
            "poolsplit: error: cannot write the output: [Errno 28] No space left "
            "on device\n",
        ),
    ],
)
def test_stdout_is_pointed_at_the_null_device_after_a_failed_write(
    files, capsys, monkeypatch, tmp_path, error, status, message
):
    monkeypatch.chdir(files)
    with open(tmp_path / "out", "wb") as target:
        monkeypatch.setattr(sys, "stdout", Failing(error, target.fileno()))
        assert main(RETRIEVE) == status
        os.write(target.fileno(), b"dropped")
    assert capsys.readouterr().err == message
    assert (tmp_path / "out").read_bytes() == b""  # the write went to devnull


def test_a_failed_write_to_a_stream_without_descriptor(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    monkeypatch.setattr(sys, "stdout", Failing(BrokenPipeError(), None))
    Failing.fileno = io.StringIO.fileno  # raises io.UnsupportedOperation
    try:
        assert main(RETRIEVE) == 0
    finally:
        del Failing.fileno
    assert capsys.readouterr().err == ""


def test_the_public_readers_are_documented():
    readme = (ROOT / "docs" / "core.md").read_text()  # the core API page
    for name in ("read_text", "parse_json", "load_pools", "DEFAULT_MAX_BYTES"):
        assert name in poolsplit.__all__
        assert f"`{name}" in readme


def test_parse_json_names_the_line():
    with pytest.raises(ValueError) as caught:
        parse = poolsplit.parse_json
        parse('{"a":\n  }', where="x.json", line=3)
    assert str(caught.value) == "x.json:4: invalid JSON: Expecting value"
    assert json.dumps(poolsplit.parse_json("[1]")) == "[1]"


def test_max_bytes_in_process(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    assert main(["validate", "s.jsonl", "--max-bytes", str(len(STORE))]) == 0
    assert main(["validate", "s.jsonl", "--max-bytes", str(len(STORE) - 1)]) == 2
    assert capsys.readouterr().err == (
        f"poolsplit: error: s.jsonl: cannot read: more than {len(STORE) - 1} bytes; "
        f"pass a larger max_bytes (--max-bytes) to read it\n"
    )


def test_load_pools_reads_stdin_and_names_it(monkeypatch):
    data = b'\xef\xbb\xbf[{"name": "a", "max_tokens": 1, "max_entries": 1}]'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert [pool.name for pool in load_pools("-")] == ["a"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'[{"name": 1}]')))
    with pytest.raises(ValueError) as caught:
        load_pools("-")
    assert str(caught.value).startswith("<stdin>: pools[0]: ")
