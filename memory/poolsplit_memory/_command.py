"""The console scripts ``poolsplit-mcp`` and ``poolsplit-memory``.

The commands that need no server (``token``, ``export``, ``import``,
``convert``, ``reindex``: ``_cli``) run before the MCP SDK is imported
(most of a second of CPU at every start); serving imports it.

Ctrl-C at any moment of startup ends the command with status 130 and one
line, as it does once the server runs. Importing the MCP SDK takes most of
a second, and a KeyboardInterrupt raised inside it is not always let
through: pydantic turned one into a schema error (status 1), and one was
lost (the server then started). So during that import Ctrl-C is only noted,
and acted on once the import is done. Only the package's own import (a
tenth of that) comes before this.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from poolsplit_memory._cli import subcommand


def main() -> int:
    """The commands beside the server, else
    :func:`poolsplit_memory.mcp_server.main`, Ctrl-C during its import or
    its startup included."""
    try:
        status = subcommand(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("poolsplit-mcp: stopped\n")
        return 130
    if status is not None:
        return status
    noted: list[int] = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        from poolsplit_memory.mcp_server import main as serve
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        if noted:
            raise KeyboardInterrupt
        return serve()
    except KeyboardInterrupt:
        # The server's own line, said once, when its module got that far.
        server = sys.modules.get("poolsplit_memory.mcp_server")
        say = getattr(server, "_say_stopped", None)
        if say is not None:
            say()
        else:
            sys.stderr.write("poolsplit-mcp: stopped\n")
        return 130
