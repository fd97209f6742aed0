"""The command line of ``poolsplit-mcp``: the flags the server reads (its
``main`` lives in ``mcp_server``, the commands beside it in ``_cli``).

Standard library and the store only: no MCP SDK, so ``--help`` and a
mistyped flag cost no SDK import.
"""

from __future__ import annotations

import argparse

from poolsplit_memory import __version__
from poolsplit_memory.store import DEFAULT_POOL_SIZE, RANKINGS

__all__ = ["PROG", "add_store_flags", "build_parser"]

PROG = "poolsplit-mcp"


def add_store_flags(parser: argparse.ArgumentParser) -> None:
    """``--db`` and ``--namespace``, as every command that opens a store
    reads them (the server, ``reindex``, ``export`` and ``import``); the url
    goes through ``_cli.choose_db``."""
    parser.add_argument(
        "--db",
        metavar="URL",
        help="a SQLite file, sqlite:///path or a postgresql:// URL "
        "(default: $XDG_DATA_HOME/poolsplit/memory.db)",
    )
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        default="default",
        help="whose memory (default: default)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="poolsplit memory served over MCP (stdio, or --http); "
        "poolsplit-mcp export|import|convert --help moves memories as JSONL",
        epilog="poolsplit-mcp reindex [--db URL] [--namespace NAME] embeds a "
        "store for --ranking semantic ahead of time (poolsplit-mcp reindex "
        "--help); poolsplit-mcp token --help manages --tokens",
    )
    add_store_flags(parser)
    parser.add_argument(
        "--pools",
        metavar="FILE",
        help="a JSON array of pools, as `poolsplit --pools` reads",
    )
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        default="lexical",
        help="how recall ranks: lexical (BM25+ with the core's signals, the "
        "default), core (poolsplit's default scorer) or semantic (needs "
        "'poolsplit-memory[semantic]')",
    )
    parser.add_argument(
        "--tz",
        metavar="NAME",
        help="the users' time zone, an IANA name such as Europe/Paris, for "
        "the times a recall's message names when the call gives none "
        "(default: UTC)",
    )
    parser.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep memory in this process only (:memory:); lost at exit",
    )
    parser.add_argument(
        "--writer",
        metavar="NAME",
        help="the name stamped as written_by on what this server writes "
        "(default: the OS user's name; over --http with --tokens, each "
        "token's own name instead)",
    )
    # --- many tenants, several instances (issue 36; README "Many tenants") ---
    parser.add_argument(
        "--pool-size",
        type=int,
        default=DEFAULT_POOL_SIZE,
        metavar="N",
        help="PostgreSQL connections per process, shared by every namespace "
        f"(default {DEFAULT_POOL_SIZE})",
    )
    parser.add_argument(
        "--snapshot-budget",
        type=int,
        default=256,
        metavar="MB",
        help="memory for the namespaces' loaded entries per process, least "
        "recently used out (default 256)",
    )
    parser.add_argument(
        "--read-db",
        metavar="URL",
        help="a postgresql:// streaming-replication standby of --db to serve "
        "reads from (writes go to --db)",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    # --- HTTP (issue 28): poolsplit_memory._http serves, _tokens keeps tokens ---
    http = parser.add_argument_group("HTTP (poolsplit-mcp token --help for tokens)")
    http.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at /mcp instead of stdio (e.g. 127.0.0.1:8765; "
        "a non-loopback host needs --tokens)",
    )
    http.add_argument(
        "--tokens",
        metavar="FILE",
        help="bearer tokens and their namespaces (poolsplit-mcp token add); "
        "or the file's JSON in $POOLSPLIT_MCP_TOKENS",
    )
    http.add_argument(
        "--workers", type=int, default=1, metavar="N", help="processes (default 1)"
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host (and Origin) clients use, besides loopback; repeatable",
    )
    http.add_argument(
        "--token-verifier",
        metavar="MODULE:NAME",
        help="an authorization server's TokenVerifier (or a factory of one) "
        "instead of --tokens; needs --issuer-url and --resource-url",
    )
    http.add_argument("--issuer-url", metavar="URL", help="the authorization server")
    http.add_argument(
        "--resource-url", metavar="URL", help="this server's public /mcp URL"
    )
    http.add_argument(
        "--max-body-bytes",
        type=int,
        default=1024 * 1024,
        metavar="N",
        help="largest request body (default 1048576)",
    )
    http.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds for a request's head to arrive (default 10)",
    )
    http.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds for a request's body to arrive (default 30)",
    )
    http.add_argument(
        "--max-connections",
        type=int,
        default=256,
        metavar="N",
        help="connections one worker holds at once (default 256)",
    )
    return parser
