"""What a warm snapshot retains, beside the store's estimate of it (issue 35).

    pip install poolsplit-memory                        # or the wheels
    python benchmarks/snapshot_bytes.py [--sizes 1000,10000]
                                        [--locomo PATH] [--kinds short,...]

A store's snapshot of a namespace (its parsed entries, the ranking's
statistics with every term's contents by length, the recall index) is
counted in the process's ``--snapshot-budget`` by an estimate: a fixed
part per entry plus a part per byte of the entry's stored JSON
(store.py, ``_SNAPSHOT_BYTES_PER_ENTRY`` and
``_SNAPSHOT_BYTES_PER_BODY_BYTE``). This measures what the estimate stands
for. ONE FRESH PROCESS per row (this script with ``--row``): a SQLite
namespace is filled by ``import_jsonl`` (bodies as ``remember`` writes them:
id, type, content, created), closed, and opened by a new store; tracemalloc
starts; three recalls (the first reads the namespace whole and builds the
snapshot, the second builds the recall index and every term's contents by
length, the third is warm); the results are dropped and the garbage
collected. Then the traced bytes with the snapshot held, the snapshot is
dropped from the process's cache (``snapshots.drop_owner``: what the budget
does when it leaves; no ``_Snapshot`` object may be left alive), collected,
and the traced bytes again. The difference is what the snapshot retains:
what leaving the budget frees. (Process-wide caches filled on the way, such
as the stems', stay and are not counted: they have bounds of their own.)
Printed per row: the mean JSON body, the retained bytes per entry after the
first recall (no index yet) and after the third, the estimate per entry
(what the budget counts, from the installed package), and the ratio
estimate / retained.

Rows: ``short``, ``medium``, ``long`` (bodies of about 100, 200 and 1,000
bytes: words drawn by a Zipf law from 20,000 pseudo-words, 40% of them
English stopwords: 0.095 terms per byte of content as LoCoMo's 0.098, and
a richer vocabulary, 4,200 terms at 1,000 entries of 130 letters to
LoCoMo's 1,500, each rare term costing lists of its own); ``locomo`` (the
turns of LoCoMo's conversations, ``speaker: text``, read from ``--locomo``;
the row is skipped when the file is absent; at 10,000 the 2,760 turns are
taken again with a marker so that each content is distinct, so its
vocabulary is that of 2,760 turns). Deterministic; nothing is asserted;
pytest never collects this. Run it niced on a shared machine: tracemalloc
makes the 10,000-entry rows take tens of seconds each.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from itertools import accumulate
from typing import Any

from conversation import START, dated

LOCOMO = "/work/shared/data/locomo/locomo-dev.json"
KINDS = {"short": 100, "medium": 200, "long": 1000}  # target JSON bytes
STOPWORDS = (
    "the", "and", "to", "of", "a", "in", "was", "it", "with", "for", "my",
    "on", "that", "is", "we", "at", "but", "so", "have", "this",
)  # fmt: skip
SYLLABLES = (
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "qu", "dra",
    "be", "fi", "gu", "ha", "je", "ly", "no", "pe", "ri", "su", "to", "wa",
)  # fmt: skip


def vocabulary(size: int = 20_000, seed: int = 0) -> list[str]:
    """``size`` distinct pseudo-words of 4 to 12 letters, in a fixed order."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def synthetic(n: int, target: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` entries whose stored JSON is about ``target`` bytes."""
    rng = random.Random(seed)
    vocab = vocabulary()
    weights = list(accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    for entry in dated(n, rng):
        room = target - len(json.dumps(entry, separators=(",", ":")))
        words: list[str] = []
        while sum(map(len, words)) + len(words) < room:
            if rng.random() < 0.4:
                words.append(rng.choice(STOPWORDS))
            else:
                words.append(rng.choices(vocab, cum_weights=weights)[0])
        entry["content"] = " ".join(words).capitalize() + "."
        yield entry


def locomo(n: int, path: str) -> Iterator[dict[str, Any]]:
    """``n`` LoCoMo turns as episodes (again with a marker past the last)."""
    with open(path, encoding="utf-8") as file:
        samples = json.load(file)
    turns: list[tuple[str, str]] = []
    for sample in samples:
        conv = sample["conversation"]
        k = 1
        while f"session_{k}_date_time" in conv or f"session_{k}" in conv:
            for turn in conv.get(f"session_{k}") or []:
                turns.append((str(turn["speaker"]), str(turn["text"])))
            k += 1
    created = START
    for number in range(n):
        speaker, text = turns[number % len(turns)]
        again = number // len(turns)
        marker = f" (again {again})" if again else ""
        created += timedelta(minutes=7)
        yield {
            "id": f"m{number:06d}",
            "type": "episode",
            "content": f"{speaker}{marker}: {text}",
            "created": created.isoformat(),
        }


LOCOMO_QUESTIONS = (
    "What did Caroline say about the support group?",
    "When did Melanie go camping with her kids?",
    "What does Caroline want to study?",
)


def messages(kind: str) -> list[str]:
    """Three recall messages: LoCoMo questions, or the vocabulary's frequent
    words five at a time."""
    if kind == "locomo":
        return list(LOCOMO_QUESTIONS)
    vocab = vocabulary()
    return [" ".join(vocab[k * 5 : k * 5 + 5]) + "?" for k in range(3)]


def row(kind: str, n: int, locomo_path: str) -> dict[str, Any]:
    """Fill a fresh namespace, then measure as the module docstring says."""
    from poolsplit_memory import open_store
    from poolsplit_memory import store as store_module

    entries = locomo(n, locomo_path) if kind == "locomo" else synthetic(n, KINDS[kind])
    text = "".join(json.dumps(entry) + "\n" for entry in entries)
    with tempfile.TemporaryDirectory() as here:
        path = os.path.join(here, "memory.db")
        with open_store(path, namespace="bench") as filling:
            assert filling.import_jsonl(io.StringIO(text)) == n
        del text, filling
        store = open_store(path, namespace="bench")
        rows = store._backend.read("bench", lambda tx: tx.every())
        body = sum(len(stored.body) for stored in rows) / len(rows)
        del rows
        cache = store_module.snapshots
        gc.collect()
        tracemalloc.start()
        after_first = 0
        for number, message in enumerate(messages(kind)):
            result = store.recall(message)
            assert sum(len(ids) for ids in result.ids().values()) > 0, message
            del result
            if number == 0:
                gc.collect()
                after_first = tracemalloc.get_traced_memory()[0]
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        estimate = cache.total
        assert cache.count(store._owner) == 1
        cache.drop_owner(store._owner)
        gc.collect()
        dropped = tracemalloc.get_traced_memory()[0]
        left = [o for o in gc.get_objects() if type(o) is store_module._Snapshot]
        assert not left, "a snapshot outlived its drop: the figure would be wrong"
        tracemalloc.stop()
        store.close()
    return {
        "kind": kind,
        "n": n,
        "body": body,
        "first": (after_first - dropped) / n,
        "retained": (held - dropped) / n,
        "estimate": estimate / n,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--kinds", default="short,medium,long,locomo")
    parser.add_argument("--locomo", default=LOCOMO, metavar="PATH")
    parser.add_argument("--row", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.row:
        print(json.dumps(row(args.row[0], int(args.row[1]), args.locomo)))
        return 0
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'row':>7} {'entries':>7} {'body B':>7} {'1st B/e':>8} "
        f"{'3rd B/e':>8} {'est B/e':>8} {'est/ret':>7}"
    )
    for kind in args.kinds.split(","):
        if kind not in KINDS and kind != "locomo":
            parser.error(f"--kinds: unknown row {kind!r}")
        if kind == "locomo" and not os.path.exists(args.locomo):
            print(f"{kind:>7}: skipped, no file at {args.locomo} (--locomo)")
            continue
        for size in (int(s) for s in args.sizes.split(",")):
            command = [sys.executable, __file__, "--row", kind, str(size)]
            done = subprocess.run(
                command + ["--locomo", args.locomo],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                return 1
            got = json.loads(done.stdout)
            print(
                f"{kind:>7} {size:>7} {got['body']:>7.0f} {got['first']:>8.0f} "
                f"{got['retained']:>8.0f} {got['estimate']:>8.0f} "
                f"{got['estimate'] / got['retained']:>7.2f}",
                flush=True,
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
