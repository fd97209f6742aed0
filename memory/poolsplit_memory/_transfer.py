"""``poolsplit-mcp export``, ``import`` and ``convert``: memories as JSONL.

    poolsplit-mcp export [--db URL] [--namespace NAME] [FILE]
    poolsplit-mcp import FILE [--db URL] [--namespace NAME] [--replace]
                              [--keep-provenance] [--writer NAME]
    poolsplit-mcp convert mcp-memory FILE [OUT] [--created WHEN]

``export`` writes a namespace as ``Store.export_jsonl`` does (every field,
``created`` and the provenance included, oldest first) to FILE, or to
standard output without one or with ``-``. ``import`` reads a file (``-``:
standard input) by ``Store.import_jsonl``'s rules: all or nothing, the
first bad line named by its number. ``convert`` turns another memory
system's file into that JSONL (:mod:`poolsplit_memory._convert`). Without
``--db`` the database is the server's (``mcp_server.default_db_path``).
Data goes to standard output, and one line a warning and one summary line
to standard error; a failure is one line there and exit status 2, never a
traceback.

Decisions:

- ``import`` stamps the importer (``--writer``, else the OS user) as each
  line's writer, now, unless ``--keep-provenance``: the store's own rule
  (``import_jsonl``). A file's ``written_by`` is whatever its author typed,
  and a converted or hand-written file has none, so keeping it is asked
  for: restoring a backup ``export`` wrote is ``import --keep-provenance``.
  The command line acts for the local user, who holds every grant (as over
  stdio), so the flag is always allowed. ``created`` is an entry's own
  field, kept either way.
- ``export`` of a SQLite file that does not exist is an error (a mistyped
  ``--db`` would otherwise create an empty database and export nothing);
  ``import`` creates it (a restore onto a new machine). An empty namespace
  exports 0 entries, said in the summary line: a new namespace is valid.
- Text is UTF-8 whatever the locale, lines end at ``"\\n"`` on every
  platform; a UTF-8 byte order mark at the start of an input is skipped
  (an editor's), and bytes that are not UTF-8 are an error naming the line.
- The subcommand comes first (``poolsplit-mcp export --db ...``): the
  server's own options are not read before it.

This module needs the store only, not the MCP SDK: ``export`` and
``import`` work on Python 3.9 as well.
"""

from __future__ import annotations

import argparse
import codecs
import io
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Callable, Final, Optional

from ._args import add_store_flags
from ._convert import convert_mcp_memory, to_jsonl
from ._types import InvalidInput, StoreError
from .store import Store, open_store, parse_url

__all__ = ["COMMANDS", "transfer_argv"]

COMMANDS: Final = ("export", "import", "convert")
_PROG: Final = "poolsplit-mcp"
_STDIO: Final = "-"

# How the server turns --db into a url (_cli.choose_db without
# --ephemeral): passed in, so that this module never imports the server.
ChooseDb = Callable[[Optional[str]], str]


class _Failed(Exception):
    """One line for standard error; the command exits 2."""


def transfer_argv(argv: Sequence[str]) -> list[str] | None:
    """``argv`` when it is an export, import or convert command, else None."""
    args = list(argv)
    return args if args[:1] and args[0] in COMMANDS else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG, description="move memories in and out as JSONL"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export",
        help="write a namespace as JSONL",
        description="Write every entry of a namespace as JSONL (dates and "
        "provenance included), oldest first.",
    )
    export.add_argument(
        "file", nargs="?", default=_STDIO, metavar="FILE", help="default: stdout"
    )
    importer = commands.add_parser(
        "import",
        help="read JSONL into a namespace, all or nothing",
        description="Store every entry of a JSONL file, all or nothing.",
    )
    importer.add_argument("file", metavar="FILE", help="a JSONL file, - for stdin")
    for command in (export, importer):
        add_store_flags(command)
    importer.add_argument(
        "--replace",
        action="store_true",
        help="a line whose id is stored already replaces it (else: an error)",
    )
    importer.add_argument(
        "--keep-provenance",
        action="store_true",
        help="keep each line's written_by, written_at, updated_by, updated_at "
        "and quarantined (restoring a backup); else every line is stamped as "
        "the importer's, now",
    )
    importer.add_argument(
        "--writer",
        metavar="NAME",
        help="the name stamped as written_by (default: the OS user's name)",
    )
    convert = commands.add_parser(
        "convert",
        help="turn another memory system's file into poolsplit JSONL",
        description="Convert the MCP reference memory server's JSONL "
        "(@modelcontextprotocol/server-memory) to poolsplit JSONL.",
    )
    convert.add_argument("format", choices=("mcp-memory",), help="the file's format")
    convert.add_argument("file", metavar="FILE", help="the file, - for stdin")
    convert.add_argument(
        "out", nargs="?", default=_STDIO, metavar="OUT", help="default: stdout"
    )
    convert.add_argument(
        "--created",
        metavar="WHEN",
        help="every entry's created, ISO 8601 (default: FILE's modification "
        "time; now for stdin)",
    )
    return parser


def main(argv: Sequence[str], choose_db: ChooseDb) -> int:
    """``poolsplit-mcp export|import|convert``; 2 with one line on error."""
    args = _parser().parse_args(list(argv))
    try:
        if args.command == "export":
            _export(args, choose_db)
        elif args.command == "import":
            _import(args, choose_db)
        else:
            _convert(args)
    except (_Failed, StoreError, ValueError) as exc:
        _say(args.command, f"error: {exc}")
        return 2
    return 0


def _say(command: str, line: str) -> None:
    print(f"{_PROG} {command}: {' '.join(line.split())}", file=sys.stderr)


# ---------------------------------------------------------------------------
# export and import


def _export(args: argparse.Namespace, choose_db: ChooseDb) -> None:
    url = choose_db(args.db)
    target = parse_url(url)
    if target.kind == "sqlite" and not os.path.exists(target.where):
        raise _Failed(
            f"no database at {os.path.abspath(target.where)}: nothing to export "
            "(pass --db)"
        )
    with open_store(url, namespace=args.namespace) as store:
        if args.file == _STDIO:
            text = io.StringIO()
            count = store.export_jsonl(text)
            _write_stdout(text.getvalue())
            dest = "standard output"
        else:
            count = store.export_jsonl(args.file)
            dest = args.file
        _say(
            "export",
            f"{_entries(count)} of namespace {store.namespace!r} in "
            f"{_where(store, url)} written to {dest}",
        )


def _import(args: argparse.Namespace, choose_db: ChooseDb) -> None:
    label, text = _read(args.file)
    url = choose_db(args.db)
    with open_store(url, namespace=args.namespace, writer=args.writer) as store:
        try:
            imported = store.import_jsonl(
                io.StringIO(text),
                replace=args.replace,
                keep_provenance=args.keep_provenance,
            )
        except InvalidInput as exc:  # NotGranted too; its line is in the text
            # The store names its keyword; this command's flag is --replace
            # (the text is for people: if it changes, the hint stays right).
            said = str(exc).replace("pass replace=True", "pass --replace")
            raise _Failed(f"{label}: {said}; nothing was imported") from None
        for warning in imported.warnings:
            _say("import", f"warning: {label}: {warning}")
        stamped = (
            "provenance kept from the file"
            if args.keep_provenance
            else f"stamped as written by {store.writer.name!r}"
        )
        if imported.warnings:
            stamped += f" ({_count(len(imported.warnings), 'warning')})"
        _say(
            "import",
            f"{_entries(imported)} from {label} imported into namespace "
            f"{store.namespace!r} in {_where(store, url)}, {stamped}",
        )


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _where(store: Store, url: str) -> str:
    """The database as the server names it: a SQLite file's absolute path,
    else the URL with any password masked."""
    target = parse_url(url)
    if target.kind == "sqlite":
        return os.path.abspath(target.where)
    return store.url


# ---------------------------------------------------------------------------
# convert


def _convert(args: argparse.Namespace) -> None:
    label, text = _read(args.file)
    created = args.created if args.created is not None else _modified(args.file)
    try:
        converted = convert_mcp_memory(text, created=created)
    except InvalidInput as exc:
        if exc.line is None:  # --created
            raise _Failed(f"--{exc}") from None
        raise _Failed(f"{label}: {exc}") from None
    for warning in converted.warnings:
        _say("convert", f"warning: {label}: {warning}")
    jsonl = to_jsonl(converted.entries)
    if args.out == _STDIO:
        _write_stdout(jsonl)
        dest = "standard output"
    else:
        try:
            with open(args.out, "w", encoding="utf-8", newline="\n") as file:
                file.write(jsonl)
        except OSError as exc:
            raise _Failed(f"cannot write {args.out}: {exc.strerror or exc}") from None
        dest = args.out
    _say(
        "convert",
        f"{_entries(len(converted.entries))} from {label} written to {dest}, "
        f"created {created}; next: {_PROG} import "
        f"{'FILE' if args.out == _STDIO else args.out}",
    )


def _modified(name: str) -> str:
    """When FILE last changed (UTC, ISO 8601, seconds); now for stdin."""
    if name == _STDIO:
        when = datetime.now(timezone.utc)
    else:
        try:
            when = datetime.fromtimestamp(os.stat(name).st_mtime, timezone.utc)
        except OSError as exc:
            raise _Failed(f"cannot read {name}: {exc.strerror or exc}") from None
    return when.isoformat(timespec="seconds")


# ---------------------------------------------------------------------------
# Text in and out: UTF-8 and "\n" whatever the locale and platform


def _read(name: str) -> tuple[str, str]:
    """The input's name for messages and its text (``-``: standard input)."""
    label = "<stdin>" if name == _STDIO else name
    try:
        if name == _STDIO:
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as file:
                data = file.read()
    except OSError as exc:
        raise _Failed(f"cannot read {label}: {exc.strerror or exc}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return label, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _Failed(f"{label}: line {line}: not valid UTF-8 ({exc.reason})") from None


def _write_stdout(text: str) -> None:
    """Write ``text`` to standard output as UTF-8 bytes, whatever its
    encoding; a reader that went away (``| head``) is a one-line error."""
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # Point stdout at devnull, so the interpreter's own flush at exit
        # does not fail a second time with a traceback (Python's signal
        # documentation, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise _Failed("standard output closed before the end was written") from None
    except OSError as exc:
        raise _Failed(f"cannot write standard output: {exc.strerror or exc}") from None
