"""Fuzz the command line: main() over store, pools and queries files from bytes.

Run: python fuzz/fuzz_cli.py [corpus_dir] -atheris_runs=N (see README.md).
The input is split on NUL bytes: a selector byte, then the store, pools and
queries file contents and a --now value. When the selector's 0x40 bit is
set, every string id of the store is led by text that looks like a position
(``entries[N]``, ``contexts[N]``): the command line once found lines by
rewriting that text in messages. main() must return 0, 1 (validate only) or
2 with exactly one ``poolsplit: error:`` line on stderr (0 and 1: only
``poolsplit: warning:`` lines), and never raise: no traceback, whatever the
files hold.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tempfile

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

with atheris.instrument_imports():
    import poolsplit

WORK = tempfile.mkdtemp(prefix="poolsplit-fuzz-")
STORE = os.path.join(WORK, "store.jsonl")
POOLS = os.path.join(WORK, "pools.json")
QUERIES = os.path.join(WORK, "queries.jsonl")

COMMANDS = [
    ["retrieve", "--format", "text"],
    ["retrieve", "--format", "json"],
    ["retrieve", "--format", "prompt"],
    ["explain", "--format", "text"],
    ["explain", "--format", "json"],
    ["validate", "--format", "text"],
    ["validate", "--format", "json"],
    ["audit", "--format", "text"],
    ["audit", "--format", "json"],
]


# Text a string id is led by (selector bit 0x40), picked by the selector.
POSITIONS = [
    b"entries[%d] ",
    b"contexts[%d] ",
    b"dup of entries[%d]",
    b"entries[%d]]",
]
ID_VALUE = re.compile(rb'("id"\s*:\s*")')


def positions_in_ids(store: bytes, selector: int) -> bytes:
    """The store with each string id led by an ``entries[N]``-like text."""
    text = POSITIONS[selector % len(POSITIONS)] % (selector % 7)
    return ID_VALUE.sub(lambda match: match[1] + text, store)


def argv_for(data: bytes) -> list[str]:
    """Write the files and build the argument list one input describes."""
    selector = data[0] if data else 0
    parts = data[1:].split(b"\0", 3) + [b""] * 4
    store, pools, queries, now = parts[:4]
    if selector & 0x40:
        store = positions_in_ids(store, selector)
    for path, content in ((STORE, store), (POOLS, pools), (QUERIES, queries)):
        with open(path, "wb") as handle:
            handle.write(content)
    argv = [*COMMANDS[selector % len(COMMANDS)], STORE]
    if argv[0] == "validate":
        return argv
    argv += ["--pools", POOLS]
    if argv[0] == "audit":
        argv += ["--queries", QUERIES]
    else:
        argv += ["--message", "deploy the cluster", "--tags", "a,b"]
    if selector & 0x80:
        argv += ["--now", now.decode("utf-8", "replace") or "2026-01-01"]
    return argv


def TestOneInput(data: bytes) -> None:
    argv = argv_for(data)
    # Strict UTF-8, as a pipe or terminal is: a str that cannot be encoded
    # would raise here as it would for a user.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        status = poolsplit.main(argv)
    except SystemExit as exc:  # main returns its status; it must not exit
        raise AssertionError(f"main raised SystemExit({exc.code!r})") from None
    finally:
        sys.stdout, sys.stderr = saved
        out.flush()
        err.flush()
    message = err.buffer.getvalue().decode("utf-8")
    assert status in (0, 1, 2), status
    if status == 1:
        assert argv[0] == "validate", argv
    if status == 2:
        assert message.startswith("poolsplit: error: "), message
        assert message.count("\n") == 1 and message.endswith("\n"), message
    else:
        lines = message.split("\n")
        assert lines.pop() == "", message  # every line ends with a newline
        assert all(line.startswith("poolsplit: warning: ") for line in lines), message


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
