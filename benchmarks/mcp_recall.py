"""Time the MCP server's ``recall`` over stdio on an N-entry SQLite store.

    pip install -e '.[integrations]'
    python benchmarks/mcp_recall.py --entries 10000 --calls 20

The store is the demo store cycled to N live entries of the six demo types
(ids made unique, 8 always-scope corrections), written before the server
starts. The server is ``examples/mcp_server.py`` with its default pools, run
as a subprocess and driven by the ``mcp`` client; each timed call is one
round trip: the request, the indexed query of every candidate row, JSON
parsing, ``retrieve_pools``, ``render`` and the reply. Three untimed calls
warm it up; the table gives the median, minimum and maximum.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import sqlite_store  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

MESSAGES = (
    "debug the billing work",
    "what is left on the search report",
    "how do I roll back the checkout deploy",
    "summarise the invoices incident",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "memory.db")
        db = sqlite_store.connect(path)
        sqlite_store.insert(db, sqlite_store.synthetic_rows(args.entries, args.entries))
        db.close()
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(ROOT / "examples" / "mcp_server.py"), "--db", path],
            env={"PYTHONPATH": str(ROOT)},
        )
        times: list[float] = []
        loaded: list[int] = []

        async def run() -> None:
            async with Client(params) as client:
                for number in range(3 + args.calls):
                    message = MESSAGES[number % len(MESSAGES)]
                    start = time.perf_counter()
                    result = await client.call_tool("recall", {"message": message})
                    elapsed = time.perf_counter() - start
                    if result.is_error or result.structured_content is None:
                        raise SystemExit(f"recall failed: {result.content}")
                    if number >= 3:
                        times.append(elapsed)
                        pools = result.structured_content["pools"]
                        loaded.append(sum(len(ids) for ids in pools.values()))

        anyio.run(run)

    print(
        f"python {sys.version.split()[0]} | {args.entries:,} entries | "
        f"{args.calls} recall calls over stdio (after 3 warm-up calls)"
    )
    print(
        f"recall ms: median {statistics.median(times) * 1e3:.1f}, "
        f"min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f}; "
        f"entries returned per call: {min(loaded)}-{max(loaded)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
