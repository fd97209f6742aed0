"""Possible supersedes: precision and recall of the rule on the development set.

    python benchmarks/supersedes.py [--sweep] [--pairs FILE]

``supersedes/pairs.json`` (issue 49's development set, CC0) holds pairs of
memories, an earlier and a later one, labelled true when the later is a new
version of the earlier, and other memories of the same persona
(``background``). The pairs are split in two halves by position: the even
ones (0, 2, ...) chose ``SAME_SUBJECT`` (``--sweep`` prints that choice's
table), the odd ones only report. Two measures per half:

- pairs: the rule (``poolsplit_memory._stale.paired``) on each pair, its
  idf that of every entry of the file of the pair's type (the earlier and
  later of every pair, and the background: a store of one persona, typed as
  the default pools type it). A pair is predicted when the rule pairs it;
  precision and recall over the pairs labelled true.
- store: what ``remember`` answers. Every earlier entry and the background
  are imported into a SQLite store (default pools, in a temporary folder);
  each later entry is remembered, its ``possible_supersedes`` read, then
  forgotten. A suggestion of the pair's earlier entry for a true pair is
  right; any other suggestion (another pair's entry, the background, the
  earlier entry of a false pair) is wrong. Precision = right / suggestions,
  recall = true pairs whose earlier entry was suggested / true pairs.

``--cost N [N ...]`` times ``remember`` on a SQLite store of N memories
(``conversation.py``'s, as ``store_scale.py`` writes them; imported, then
one recall builds the snapshot): 30 rounds, each a remember with the
lookup and one with it replaced by "nothing found" (interleaved, each new
content written then forgotten), and prints the medians, their ratio, and
how many entries the lookup compared (those of the contents
``near_contents`` finds) against the entries of the pool; then 30 rounds
of two warm recalls, with the recall's pairs' warnings and without them.
Nothing is asserted; exit status 0.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import poolsplit_memory.store as store_module
from poolsplit_memory import open_store
from poolsplit_memory._ranking import Statistics
from poolsplit_memory._stale import SAME_SUBJECT, near_contents, paired

PAIRS = Path(__file__).resolve().parent / "supersedes" / "pairs.json"
HALVES = ("choose", "report")


def _load(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    pairs: list[dict[str, Any]] = []
    for i, pair in enumerate(data["pairs"]):
        earlier = {"id": f"p{i:02d}-earlier", **pair["earlier"]}
        later = {"id": f"p{i:02d}-later", **pair["later"]}
        pairs.append({**pair, "index": i, "earlier": earlier, "later": later})
    background = [
        {"id": f"bg{j:02d}", **entry} for j, entry in enumerate(data["background"])
    ]
    return pairs, background


def _half(pair: dict[str, Any]) -> str:
    return HALVES[pair["index"] % 2]


def _figures(right: int, suggested: int, found: int, positives: int) -> str:
    precision = right / suggested if suggested else 1.0
    recall = found / positives if positives else 1.0
    return (
        f"precision {precision:.2f} ({right}/{suggested})  "
        f"recall {recall:.2f} ({found}/{positives})"
    )


def _pair_predictions(
    pairs: Sequence[dict[str, Any]],
    background: Sequence[dict[str, Any]],
    threshold: float,
) -> dict[int, bool]:
    everyone = [e for p in pairs for e in (p["earlier"], p["later"])]
    everyone += background
    stats: dict[str, Statistics] = {}
    for entry in everyone:
        stats.setdefault(entry["type"], Statistics()).add(entry)
    return {
        p["index"]: paired(
            p["earlier"],
            p["later"],
            stats[p["earlier"]["type"]].idf,
            threshold=threshold,
        )
        for p in pairs
    }


def pair_table(
    pairs: Sequence[dict[str, Any]],
    background: Sequence[dict[str, Any]],
    threshold: float = SAME_SUBJECT,
) -> dict[str, str]:
    """Each half's precision and recall of the rule on its pairs."""
    predicted = _pair_predictions(pairs, background, threshold)
    rows = {}
    for half in HALVES:
        mine = [p for p in pairs if _half(p) == half]
        right = sum(1 for p in mine if predicted[p["index"]] and p["label"])
        suggested = sum(1 for p in mine if predicted[p["index"]])
        positives = sum(1 for p in mine if p["label"])
        rows[half] = _figures(right, suggested, right, positives)
    return rows


def _tally(
    pairs: Sequence[dict[str, Any]], found: dict[int, list[str]]
) -> dict[str, str]:
    counts = {half: [0, 0, 0, 0] for half in HALVES}  # right, suggested, found, pos
    for p in pairs:
        row = counts[_half(p)]
        hit = p["label"] and p["earlier"]["id"] in found[p["index"]]
        row[0] += hit
        row[1] += len(found[p["index"]])
        row[2] += hit
        row[3] += p["label"]
    return {half: _figures(*counts[half]) for half in HALVES}


def modelled_store_table(
    pairs: Sequence[dict[str, Any]],
    background: Sequence[dict[str, Any]],
    threshold: float = SAME_SUBJECT,
) -> dict[str, str]:
    """:func:`store_table` computed by the rule alone (the default pools
    rank each type of the set in a pool of its own, ``note`` in ``other``),
    for the threshold sweep; equal to the store's at ``SAME_SUBJECT``."""
    stored = [p["earlier"] for p in pairs] + list(background)
    found = {}
    for p in pairs:
        later = p["later"]
        kind = [e for e in stored if e["type"] == later["type"]]
        stats = Statistics([*kind, later])
        found[p["index"]] = [
            e["id"] for e in kind if paired(later, e, stats.idf, threshold=threshold)
        ]
    return _tally(pairs, found)


def store_table(
    pairs: Sequence[dict[str, Any]], background: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """Each half's precision and recall of ``remember``'s suggestions."""
    found: dict[int, list[str]] = {}
    with tempfile.TemporaryDirectory() as folder:
        lines = [json.dumps(p["earlier"]) for p in pairs]
        lines += [json.dumps(entry) for entry in background]
        source = Path(folder) / "earlier.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with open_store(str(Path(folder) / "memory.db")) as store:
            store.import_jsonl(str(source))
            store.recall("warm the snapshot")
            for p in pairs:
                later = p["later"]
                written = store.remember(later["content"], type=later["type"])
                found[p["index"]] = written.possible_supersedes
                store.forget(written.id)
    return _tally(pairs, found)


def _compared(store: Any, content: str, kind: str) -> tuple[int, int]:
    """(entries the lookup would compare, entries of the pool) for a new
    ``content`` of ``kind`` (read from the store's snapshot, as remember
    does; private names: a benchmark's view, no API)."""
    with store._cache_lock:
        snap = store._snapshot()
        part = snap.parts.parts.get(snap.parts.owner({"type": kind}))
        if part is None:
            return 0, 0
        stats = part.stats
        found = stats.terms_of(content)
        contents = near_contents(found, stats.idf, stats.holders)
        return len(part.holding(contents)), len(part)


def cost(size: int, rounds: int = 30) -> str:
    """One line: remember's median with the lookup and without, at ``size``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conversation import memories, sentence

    rng = random.Random(7)
    found = store_module._possible_supersedes
    times: dict[bool, list[float]] = {True: [], False: []}
    compared: list[int] = []
    pool = 0
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "fill.jsonl"
        source.write_text(
            "".join(json.dumps(entry) + "\n" for entry in memories(size)),
            encoding="utf-8",
        )
        with open_store(str(Path(folder) / "memory.db"), namespace="ada") as store:
            store.import_jsonl(str(source))
            store.recall("warm the snapshot")
            store.recall("and build the index")
            for number in range(rounds + 2):
                for on in (True, False) if number % 2 else (False, True):
                    content = sentence(rng)
                    store_module._possible_supersedes = (
                        found if on else (lambda snap, entry: [])
                    )
                    started = time.perf_counter()
                    written = store.remember(content, type="episode")
                    took = time.perf_counter() - started
                    store_module._possible_supersedes = found
                    if on:
                        seen, pool = _compared(store, content, "episode")
                        compared.append(seen)
                    store.forget(written.id)
                    if number >= 2:  # warm-up rounds left out
                        times[on].append(took)
            recalls = _recall_times(store, rounds, sentence, rng)
    with_ms = statistics.median(times[True]) * 1000
    without_ms = statistics.median(times[False]) * 1000
    recall_with = statistics.median(recalls[True]) * 1000
    recall_without = statistics.median(recalls[False]) * 1000
    return (
        f"{size:>7,} entries: remember {with_ms:.2f} ms with the lookup, "
        f"{without_ms:.2f} ms without (ratio {with_ms / without_ms:.2f}); "
        f"compared {statistics.median(compared):.0f} of {pool} episodes (median); "
        f"warm recall {recall_with:.2f} ms with the pairs' warnings, "
        f"{recall_without:.2f} ms without (ratio {recall_with / recall_without:.2f})"
    )


def _recall_times(
    store: Any, rounds: int, sentence: Any, rng: random.Random
) -> dict[bool, list[float]]:
    """Warm recalls of a sentence-like message, with the recall's pairs'
    warnings and with them replaced by none, interleaved."""
    warned = store_module._stale_warnings
    times: dict[bool, list[float]] = {True: [], False: []}
    for number in range(rounds + 2):
        message = sentence(rng)
        for on in (True, False) if number % 2 else (False, True):
            store_module._stale_warnings = warned if on else (lambda got, snap: [])
            started = time.perf_counter()
            store.recall(message)
            took = time.perf_counter() - started
            store_module._stale_warnings = warned
            if number >= 2:
                times[on].append(took)
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument(
        "--sweep", action="store_true", help="the choose half's threshold table"
    )
    parser.add_argument("--cost", type=int, nargs="+", metavar="N")
    args = parser.parse_args(argv)
    if args.cost:
        for size in args.cost:
            print(cost(size))
        return 0
    pairs, background = _load(args.pairs)
    positives = sum(1 for p in pairs if p["label"])
    print(
        f"{len(pairs)} pairs ({positives} true, {len(pairs) - positives} false), "
        f"{len(background)} background entries; SAME_SUBJECT = {SAME_SUBJECT}"
    )
    if args.sweep:
        for step in range(30, 71, 2):
            threshold = step / 100
            row = pair_table(pairs, background, threshold)["choose"]
            print(f"  choose half, threshold {threshold:.2f}, pairs: {row}")
            row = modelled_store_table(pairs, background, threshold)["choose"]
            print(f"  choose half, threshold {threshold:.2f}, store: {row}")
    for name, table in (
        ("pairs", pair_table(pairs, background)),
        ("store", store_table(pairs, background)),
        ("rule", modelled_store_table(pairs, background)),
    ):
        for half in HALVES:
            print(f"{name:5}  {half:6}  {table[half]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
