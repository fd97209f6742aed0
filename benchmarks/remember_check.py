"""remember with and without the identical-memory check, in one process.

    python benchmarks/remember_check.py                 # SQLite, 1k/10k/100k
    python benchmarks/remember_check.py postgresql://... 1000 10000

Imports N notes into a fresh namespace, then times 40 interleaved pairs of
remember calls: one through the store's duplicate check (``_duplicate``),
one with the check replaced by "no duplicate". Prints medians and the ratio
(quote them as ratios from one run; this machine is shared and noisy).
"""

from __future__ import annotations

import io
import json
import os
import statistics
import sys
import tempfile
import time

import poolsplit_memory.store as store_module
from poolsplit_memory import open_store


def main(argv: list[str]) -> None:
    url = argv[0] if argv and argv[0] else None  # "" or none: a SQLite file
    sizes = [int(a) for a in argv[1:]] or [1_000, 10_000, 100_000]
    real = store_module._duplicate
    for n in sizes:
        where = url or os.path.join(tempfile.mkdtemp(), "m.db")
        store = open_store(where, namespace=f"bench-{n}-{os.getpid()}")
        lines = "".join(
            json.dumps(
                {"id": f"e{i}", "type": "note", "content": f"note {i} about billing"}
            )
            + "\n"
            for i in range(n)
        )
        store.import_jsonl(io.StringIO(lines))
        times: dict[str, list[float]] = {"with": [], "without": []}
        for turn in range(40):
            for label in ("with", "without"):
                store_module._duplicate = (
                    real if label == "with" else (lambda *a, **k: None)
                )
                start = time.perf_counter()
                store.remember(f"turn {turn} {label}: a fresh note about billing")
                times[label].append((time.perf_counter() - start) * 1000)
        store_module._duplicate = real
        a, b = (statistics.median(times[k]) for k in ("with", "without"))
        print(
            f"{n:>7} entries: {a:.2f} ms with the check, "
            f"{b:.2f} ms without ({a / b:.2f}x)"
        )
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
