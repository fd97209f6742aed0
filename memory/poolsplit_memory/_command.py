"""The console scripts ``poolsplit-mcp`` and ``poolsplit-memory``.

Ctrl-C at any moment of startup ends the command with status 130 and one
line, as it does once the server runs: importing the MCP SDK takes most of
a second, and an interrupt there used to print a traceback. Only the
package's own import (a tenth of that) comes before this handler.
"""

from __future__ import annotations

import sys


def main() -> int:
    """:func:`poolsplit_memory.mcp_server.main`, Ctrl-C during its import or
    its startup included."""
    try:
        from poolsplit_memory.mcp_server import main as serve

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
