"""``poolsplit-mcp reindex``: embed a store for the semantic ranking ahead
of time, with progress on stderr and a resumable position.

    poolsplit-mcp reindex [--db URL] [--namespace NAME]

Each batch of 32 vectors is committed on its own, so an interrupted
reindex (Ctrl-C, a killed process) keeps what it embedded, and running it
again embeds only the entries still without a vector of their current
content: its position is the side table itself. A server running on the
same store meanwhile reads the vectors it writes. Exit 0 when done, 2 on
bad arguments or a database that cannot be opened, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, TextIO

from poolsplit_memory import StoreError, open_store
from poolsplit_memory._args import add_store_flags

__all__ = ["main"]

_PROG = "poolsplit-mcp reindex"
_BAR = 30  # characters of the progress bar


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="embed every entry of a namespace that has no vector of "
        "its current content (the semantic ranking's), 32 a transaction: an "
        "interrupted run keeps what it did, and a rerun resumes",
    )
    add_store_flags(parser)
    return parser


def progress_bar(out: TextIO) -> Callable[[int, int], None]:
    """``progress(done, total)`` drawn on ``out``: one line redrawn on a
    terminal, else a line at each tenth (a log stays short)."""
    started = time.monotonic()
    shown = [-1]
    live = out.isatty()

    def show(done: int, total: int) -> None:
        tenth = 10 if total == 0 else done * 10 // total
        if not live and tenth == shown[0] and done != total:
            return
        shown[0] = tenth
        filled = _BAR if total == 0 else done * _BAR // total
        seconds = time.monotonic() - started
        line = (
            f"{_PROG}: [{'#' * filled}{'.' * (_BAR - filled)}] "
            f"{done}/{total} entries, {seconds:.1f} s"
        )
        out.write(("\r" + line) if live else (line + "\n"))
        if live and done == total:
            out.write("\n")
        out.flush()

    return show


def main(argv: list[str], choose_db: Callable[[str | None], str]) -> int:
    """Run the command; ``choose_db`` is the server's choice of database
    (``--db`` or the default path; ValueError with the one line)."""
    args = _parser().parse_args(argv)
    try:
        url = choose_db(args.db)
        store = open_store(url, namespace=args.namespace, ranking="semantic")
    except (ValueError, StoreError) as exc:
        print(f"{_PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    with store:
        print(f"{_PROG}: namespace {store.namespace!r} in {store.url}", file=sys.stderr)
        try:
            embedded = store.reindex(progress=progress_bar(sys.stderr))
        except KeyboardInterrupt:
            print(f"\n{_PROG}: stopped; run it again to resume", file=sys.stderr)
            return 130
        except StoreError as exc:
            print(f"{_PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
    print(f"{_PROG}: {embedded} entries embedded", file=sys.stderr)
    return 0
