"""What ``poolsplit-mcp`` does before it serves: where the memory lives
(``--db``, ``--ephemeral``, the default path) and the commands beside the
server (``token``, ``export``, ``import``, ``convert``, ``reindex``), none
of which imports the MCP SDK (most of a second of CPU at every start: a
script adding ten tokens paid ten of them). ``_command.main`` runs these
before importing the server; ``mcp_server.main`` runs them too (a caller
of ``main([...])``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from poolsplit_memory.store import is_ephemeral

# ---------------------------------------------------------------------------
# Where the memory lives


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/poolsplit/memory.db``, else under ``~/.local/share``.

    An empty or relative ``XDG_DATA_HOME`` is ignored, as the XDG base
    directory specification says.
    """
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local/share"
    return root / "poolsplit" / "memory.db"


def _is_ephemeral(url: str) -> bool:
    """True for a store that would not outlive the process: an empty value
    (an unset variable), or what the store reads as ``:memory:``.

    Raises:
        InvalidInput: the store cannot read the url at all.
    """
    return not url.strip() or is_ephemeral(url)


def choose_db(db: str | None, ephemeral: bool) -> str:
    """The store's url from the flags; raises ValueError with the one line."""
    if ephemeral:
        if db is not None and not _is_ephemeral(db):
            raise ValueError(
                f"--ephemeral keeps memory in this process only; drop it or --db {db!r}"
            )
        return ":memory:"
    if db is None:
        path = default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"cannot create {str(path.parent)!r}: {exc.strerror or exc}; "
                f"pass --db PATH"
            ) from None
        return str(path)
    if _is_ephemeral(db):
        raise ValueError(
            f"--db {db!r} keeps nothing after the server exits (an unset "
            f"variable in the client's configuration gives ''); pass a file path "
            f"or a postgresql:// URL, or --ephemeral to mean it"
        )
    return db


# ---------------------------------------------------------------------------
# The commands beside the server


def subcommand(argv: list[str]) -> int | None:
    """Run ``poolsplit-mcp token ...``, ``export|import|convert ...`` or
    ``reindex ...`` and return its status; None when ``argv`` is none of
    them (serve)."""
    from poolsplit_memory import _tokens  # the standard library only

    token_argv = _tokens.token_argv(argv)  # poolsplit-mcp token add|remove|list
    if token_argv is not None:
        return _tokens.main(token_argv)
    from poolsplit_memory import _transfer  # the store only, no MCP SDK

    transfer_argv = _transfer.transfer_argv(argv)  # export|import|convert
    if transfer_argv is not None:
        return _transfer.main(transfer_argv, lambda db: choose_db(db, False))
    if argv[:1] == ["reindex"]:  # issue 50: embed a store ahead of time
        from poolsplit_memory import _reindex

        return _reindex.main(argv[1:], lambda db: choose_db(db, False))
    return None
