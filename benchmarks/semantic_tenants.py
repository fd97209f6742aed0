"""One tenant's 1 MiB messages against another tenant's recall, over --http (issue 50).

    pip install 'poolsplit-memory[mcp,semantic]'   # or the wheels, see README
    python benchmarks/semantic_tenants.py [--entries 2000] [--tenants 8]
                                          [--rounds 6] [--calls 10]
                                          [--ranking semantic] [--quick]

A SQLite store in a temporary folder holds ``--entries`` conversational
memories (``conversation.memories``) in each of ``--tenants`` namespaces,
each with its vectors (random unit vectors stored with the entries'
digests, as ``semantic_speed.py`` plants them: a recall's cost does not
depend on what they hold). The installed ``poolsplit-mcp --http`` serves it
with ``--ranking semantic`` (``--ranking`` sets it) and one token per
tenant (``poolsplit-mcp token add``), a body limit of 2 MiB so that a
1 MiB message is read rather than refused, one worker.

Throughout, every tenant but the first two recalls short new messages in a
loop (background load: the other tenants of a team's server). The second
tenant, the one measured, recalls short new messages one after another
(each new to the process, so its embedding is never a cache hit). Rounds
alternate: *quiet* (nothing else) and *noisy* (the first tenant sends
recalls of 1 MiB messages, new each time, over and over, from two
connections at once), ``--calls`` measured recalls a round. Printed: the
measured tenant's p50 and p99 (nearest rank) in each phase and noisy over
quiet (issue 50's target: p99 within 2 times). Nothing is asserted;
pytest never collects this. ``--quick`` (CI): 300 entries, 4 tenants,
2 rounds of 5.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from conversation import memories, sentence
from http_recall import serve, server_command
from poolsplit_memory import open_store
from semantic_speed import _plant

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
MIB = 1024 * 1024


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def long_message(n: int) -> str:
    """A new 1 MiB message (its first words differ each time)."""
    head = f"round {n}: " + sentence(random.Random(-n)) + " "
    return (head + "yesterday we talked about the billing export " * 30000)[:MIB]


class Caller:
    """One tenant's client: ``recall`` over plain HTTP with its token."""

    def __init__(self, base: str, token: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.headers = {**HEADERS, "authorization": f"Bearer {token}"}

    def recall(self, message: str) -> float:
        """Seconds for one recall; raises when it did not answer a result."""
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"message": message}},
            }
        ).encode()
        started = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:  # a connection a call, as the tests' plain requests
            conn.request("POST", "/mcp", body=body, headers=self.headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        took = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"recall answered {response.status}: {data[:300]!r}")
        result = json.loads(data)["result"]
        if result.get("isError"):
            raise SystemExit(f"recall failed: {result['content']}")
        return took


@contextmanager
def looping(callers: list[Caller], messages: Messages) -> Iterator[None]:
    """Each caller recalls the next of ``messages`` over and over, in a
    thread of its own, until the block ends."""
    stop = threading.Event()

    def loop(caller: Caller) -> None:
        while not stop.is_set():
            caller.recall(next(messages))

    threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in callers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


class Messages:
    """New messages, ``make(1)``, ``make(2)``, ..., safe to take from
    several threads."""

    def __init__(self, make: Callable[[int], str]) -> None:
        self.make, self.n, self.lock = make, 0, threading.Lock()

    def __next__(self) -> str:
        with self.lock:
            self.n += 1
            n = self.n
        return self.make(n)


def short_message(n: int) -> str:
    """A new short question."""
    return f"({n}) " + sentence(random.Random(n))


def fill(
    url: str, tokens_file: Path, tenants: int, entries: int, ranking: str
) -> list[str]:
    """Each tenant's namespace filled (and its vectors planted when semantic);
    the tenants' tokens, in order."""
    tokens = []
    text = "".join(json.dumps(e) + "\n" for e in memories(entries))
    for number in range(tenants):
        namespace = f"t{number}"
        with open_store(url, namespace=namespace) as store:
            store.import_jsonl(io.StringIO(text))
        if ranking == "semantic":
            _plant(url, namespace, seed=number)
        made = subprocess.run(
            [server_command(), "token", "--tokens", str(tokens_file), "add"]
            + [namespace, "--namespace", namespace],
            capture_output=True,
            text=True,
            check=True,
        )
        tokens.append(made.stdout.strip())
    return tokens


def measure(
    base: str, tokens: list[str], rounds: int, calls: int
) -> dict[str, list[float]]:
    """The measured tenant's recall times (seconds) in each phase, the
    phases of a round in alternating order, the background tenants busy
    throughout."""
    callers = [Caller(base, token) for token in tokens]
    noisy = [callers[0], Caller(base, tokens[0])]
    measured, background = callers[1], callers[2:]
    short = Messages(short_message)
    for _ in range(3):  # warm-up: each tenant's snapshot and the model
        for caller in callers:
            caller.recall(next(short))
    times: dict[str, list[float]] = {"quiet": [], "noisy": []}
    with looping(background, short):
        for round_ in range(rounds):
            order = ("quiet", "noisy") if round_ % 2 == 0 else ("noisy", "quiet")
            for phase in order:
                beside = noisy if phase == "noisy" else []
                with looping(beside, Messages(long_message)):
                    if beside:
                        time.sleep(0.5)  # the long recalls under way
                    for _ in range(calls):
                        times[phase].append(measured.recall(next(short)))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument(
        "--ranking", choices=("semantic", "lexical"), default="semantic"
    )
    parser.add_argument("--quick", action="store_true", help="CI: small and short")
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.tenants, args.rounds, args.calls = 300, 4, 2, 5
    if args.tenants < 3:
        parser.error("--tenants: at least 3 (the noisy, the measured, a background)")
    with tempfile.TemporaryDirectory() as folder:
        url = os.path.join(folder, "memory.db")
        tokens_file = Path(folder) / "tokens.json"
        started = time.perf_counter()
        tokens = fill(url, tokens_file, args.tenants, args.entries, args.ranking)
        filled = time.perf_counter() - started
        print(
            f"semantic_tenants: {args.tenants} tenants of {args.entries} entries "
            f"(SQLite, {args.ranking}), filled in {filled:.1f} s; {args.rounds} "
            f"rounds of {args.calls} recalls a phase; Python {sys.version.split()[0]}"
        )
        extra = ["--ranking", args.ranking, "--tokens", str(tokens_file)]
        extra += ["--max-body-bytes", str(2 * MIB)]
        with serve(url, folder, 1, extra) as server:
            times = measure(server.base, tokens, args.rounds, args.calls)
    print(f"{'phase':<6}  {'recalls':>7}  {'p50 ms':>8}  {'p99 ms':>8}")
    for phase, got in times.items():
        p50, p99_ = statistics.median(got) * 1000, p99(got) * 1000
        print(f"{phase:<6}  {len(got):7d}  {p50:8.1f}  {p99_:8.1f}")
    quiet, loud = times["quiet"], times["noisy"]
    ratio50 = statistics.median(loud) / statistics.median(quiet)
    print(
        f"noisy / quiet: p50 x{ratio50:.2f}, p99 x{p99(loud) / p99(quiet):.2f} "
        "(issue 50: p99 at most x2)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
