"""Everyday questions: does a recall load what a person would want loaded?

    python benchmarks/everyday.py [--ranking lexical|semantic] [--verbose]
        [--json FILE] [--persona FILE] [--cosines]

``everyday/persona.json`` (issue 48's development set, CC0) holds one
persona's memories (a software engineer with a partner, a dog, a billing
service and a database migration; every type the default pools take, and a
custom type for the spill-over pool), each with the date it was written, and
questions of four kinds: vague intent ("what should I work on next?"),
specific (names its subject in the memory's words), paraphrased (the same
meaning in other words) and one type (the one entry of a type that matters
among many of another type). Each question lists the ids a person would want
loaded (``want``) and the ids they would not (``not``); it passes when every
wanted id is loaded and no unwanted one is.

For each ranking, the entries are imported with ``import_jsonl`` (in the
order they were written, ``created`` kept) into a SQLite store in a
temporary folder, and each question is one ``recall`` with the default pools
at the question's ``now`` (the set's unless it gives its own), as a user's
store does it. The table gives, per kind, the questions passed and the mean
number of entries a recall loaded, always-scope ones included, and of those
the always-scope ones. ``--ranking`` may be given twice; by default
``lexical``, and ``semantic`` when the ``semantic`` extra is installed
(otherwise skipped, saying so). Nothing is timed or asserted; the exit
status is 0 when some ranking ran, 2 when none could.

``--cosines`` (the ``semantic`` extra) prints instead what the semantic
ranking's model alone says: for each question, each wanted and unwanted
id's cosine with the message and its rank by cosine among the entries of
its own pool (the default pools', active entries only), and how many
wanted ids the model ranks
first in their pool: whether a floor or rule on the model's similarity
could tell them apart at all.

A test imports this file by path and calls :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from poolsplit_memory import InvalidInput, default_pools, open_store

import poolsplit

PERSONA = Path(__file__).resolve().parent / "everyday" / "persona.json"
KINDS = ("vague", "specific", "paraphrased", "one type")
RANKINGS = ("lexical", "semantic")


# ===========================================================================
# The set
# ===========================================================================


@dataclass(frozen=True)
class Question:
    """One question of the set, its ``now`` read."""

    kind: str
    message: str
    now: datetime
    want: tuple[str, ...]
    not_wanted: tuple[str, ...]  # the set's ``not``


@dataclass(frozen=True)
class Persona:
    """The set: the entries in the order they were written, the questions."""

    now: datetime
    entries: list[dict[str, Any]]
    questions: list[Question]


def _instant(text: str) -> datetime:
    """An ISO 8601 instant with its offset ("Z" or "+00:00")."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def load(path: Path = PERSONA) -> Persona:
    """The set in ``path``; entries sorted by ``created`` (stable)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    now = _instant(data["now"])
    entries = sorted(data["entries"], key=lambda e: _instant(e["created"]))
    questions = [
        Question(
            kind=q["kind"],
            message=q["message"],
            now=_instant(q["now"]) if "now" in q else now,
            want=tuple(q["want"]),
            not_wanted=tuple(q["not"]),
        )
        for q in data["questions"]
    ]
    return Persona(now, entries, questions)


# ===========================================================================
# A run
# ===========================================================================


@dataclass(frozen=True)
class Result:
    """One question recalled by one ranking: what loaded, per pool."""

    ranking: str
    question: Question
    pools: dict[str, tuple[str, ...]]  # the ids loaded, per pool, in pool order
    always: tuple[str, ...]  # the loaded ids that are always-scope

    @property
    def loaded(self) -> tuple[str, ...]:
        """Every id loaded, always-scope ones included, pool by pool."""
        return tuple(i for ids in self.pools.values() for i in ids)

    @property
    def missing(self) -> tuple[str, ...]:
        """The wanted ids that did not load."""
        loaded = set(self.loaded)
        return tuple(i for i in self.question.want if i not in loaded)

    @property
    def unwanted(self) -> tuple[str, ...]:
        """The ``not`` ids that loaded."""
        loaded = set(self.loaded)
        return tuple(i for i in self.question.not_wanted if i in loaded)

    @property
    def passed(self) -> bool:
        """Every wanted id loaded and no unwanted one."""
        return not self.missing and not self.unwanted


def _import(store: Any, entries: Sequence[dict[str, Any]], path: Path) -> None:
    """The entries as one JSONL file, in the order written; then a check that
    each one's ``created`` is the instant the set gives."""
    lines = [json.dumps(entry, ensure_ascii=False) for entry in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store.import_jsonl(str(path))
    if store.ranking == "semantic":  # every vector, not the catch-up's state
        store.reindex()
    for entry in entries:
        stored = store.get(entry["id"])
        kept = None if stored is None else stored.get("created")
        if kept is None or poolsplit.parse_created(kept) != poolsplit.parse_created(
            entry["created"]
        ):
            raise RuntimeError(
                f"entry {entry['id']!r}: created {entry['created']!r} stored as "
                f"{kept!r}"
            )


def run(ranking: str, persona: Path = PERSONA) -> list[Result]:
    """Every question of the set, recalled by a fresh store ranked so.

    Raises:
        InvalidInput: ``ranking`` is not the store's, or its extra is missing
            (``.field == "ranking"``).
        RuntimeError: the store did not keep an entry's ``created``.
    """
    data = load(persona)
    results = []
    with tempfile.TemporaryDirectory(prefix="everyday-") as tmp:
        path = Path(tmp) / "everyday.db"
        store = open_store(path, namespace="persona", ranking=ranking)
        try:
            _import(store, data.entries, Path(tmp) / "persona.jsonl")
            for question in data.questions:
                got = store.recall(question.message, now=question.now)
                pools = {
                    name: tuple(str(e["id"]) for e in entries)
                    for name, entries in got.pools.items()
                }
                always = tuple(
                    str(e["id"])
                    for entries in got.pools.values()
                    for e in entries
                    if poolsplit.is_always(e)
                )
                results.append(Result(ranking, question, pools, always))
        finally:
            store.close()
    return results


# ===========================================================================
# Reports
# ===========================================================================


def _mean(values: Iterable[int]) -> float:
    found = list(values)
    return sum(found) / len(found)


def summary(results: Sequence[Result]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per ranking, per kind and for ``all``: questions passed and total, and
    the mean entries loaded per recall (always-scope ones included) and of
    those always-scope. A kind with no question is left out."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ranking in dict.fromkeys(r.ranking for r in results):
        mine = [r for r in results if r.ranking == ranking]
        out[ranking] = {}
        for kind in (*KINDS, "all"):
            group = [r for r in mine if kind in ("all", r.question.kind)]
            if group:
                out[ranking][kind] = {
                    "passed": sum(r.passed for r in group),
                    "total": len(group),
                    "loaded_per_recall": _mean(len(r.loaded) for r in group),
                    "always_per_recall": _mean(len(r.always) for r in group),
                }
    return out


def table(results: Sequence[Result]) -> list[str]:
    """:func:`summary` as aligned rows."""
    head = ["ranking", "kind", "passed", "loaded/recall", "always/recall"]
    rows = [head]
    for ranking, kinds in summary(results).items():
        for kind, s in kinds.items():
            rows.append(
                [
                    ranking,
                    kind,
                    f"{s['passed']}/{s['total']}",
                    f"{s['loaded_per_recall']:.2f}",
                    f"{s['always_per_recall']:.2f}",
                ]
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]


def failures(results: Sequence[Result]) -> list[str]:
    """Each failing question: what was missing, unwanted, and loaded."""
    lines = []
    for r in results:
        if r.passed:
            continue
        lines.append(f"[{r.ranking}] {r.question.kind}: {r.question.message!r}")
        if r.missing:
            lines.append(f"    missing:  {', '.join(r.missing)}")
        if r.unwanted:
            lines.append(f"    unwanted: {', '.join(r.unwanted)}")
        for name, ids in r.pools.items():
            lines.append(f"    {name + ':':13s}{', '.join(ids) or '-'}")
    return lines


def as_json(results: Sequence[Result]) -> dict[str, Any]:
    """The results, machine-readable: per ranking, the summary per kind and
    every question."""
    kinds = summary(results)
    out: dict[str, Any] = {}
    for ranking in kinds:
        mine = [r for r in results if r.ranking == ranking]
        out[ranking] = {
            "kinds": kinds[ranking],
            "questions": [
                {
                    "kind": r.question.kind,
                    "message": r.question.message,
                    "now": r.question.now.isoformat(),
                    "want": list(r.question.want),
                    "not": list(r.question.not_wanted),
                    "passed": r.passed,
                    "missing": list(r.missing),
                    "unwanted": list(r.unwanted),
                    "pools": {name: list(ids) for name, ids in r.pools.items()},
                    "always": list(r.always),
                }
                for r in mine
            ],
        }
    return out


def model_ranks(persona: Path = PERSONA) -> list[str]:
    """:func:`main`'s ``--cosines`` lines: each question's wanted (``+``) and
    unwanted (``-``) ids with their cosine and their rank by cosine in their
    own pool, then the count of wanted ids ranked first in their pool.

    Raises:
        ImportError: the ``semantic`` extra is missing (its install hint).
    """
    from poolsplit_memory._semantic import Embedder, cosines

    data = load(persona)
    entries = [e for e in data.entries if poolsplit.default_is_active(e)]
    embedder = Embedder.shared()
    matrix = embedder.matrix(embedder.passages([str(e["content"]) for e in entries]))
    pools = default_pools(str(e["type"]) for e in entries)
    owner = {
        str(e["id"]): next(
            p.name for p in pools if p.types is None or e["type"] in p.types
        )
        for e in entries
    }
    lines, first, wanted = [], 0, 0
    for question in data.questions:
        cos = dict(
            zip(
                (str(e["id"]) for e in entries),
                (float(c) for c in cosines(matrix, embedder.query(question.message))),
            )
        )
        lines.append(f"[{question.kind}] {question.message}")
        for sign, ids in (("+", question.want), ("-", question.not_wanted)):
            for ident in ids:
                mates = sorted(
                    (i for i in cos if owner[i] == owner[ident]),
                    key=lambda i: -cos[i],
                )
                rank = mates.index(ident) + 1
                lines.append(
                    f"    {sign} {ident:20s} cos {cos[ident]:.3f}  rank {rank}/"
                    f"{len(mates)} in {owner[ident]} (best {mates[0]} "
                    f"{cos[mates[0]]:.3f})"
                )
                if sign == "+":
                    wanted += 1
                    first += rank == 1
    lines.append(f"wanted ids the model ranks first in their pool: {first}/{wanted}")
    return lines


# ===========================================================================
# Command line
# ===========================================================================


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--ranking",
        action="append",
        choices=RANKINGS,
        help="lexical or semantic (repeatable); default both where installed",
    )
    parser.add_argument("--verbose", action="store_true", help="each failure")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--persona", type=Path, default=PERSONA)
    parser.add_argument(
        "--cosines",
        action="store_true",
        help="the semantic model's cosines and ranks per pool, instead",
    )
    args = parser.parse_args(argv)
    if args.cosines:
        print("\n".join(model_ranks(args.persona)))
        return 0
    data = load(args.persona)
    results: list[Result] = []
    for ranking in dict.fromkeys(args.ranking or RANKINGS):
        try:
            results += run(ranking, args.persona)
        except InvalidInput as exc:
            if exc.field != "ranking":
                raise
            print(f"{ranking} ranking skipped: {exc}", file=sys.stderr)
    if not results:
        return 2
    print(
        f"{args.persona.name}: {len(data.entries)} memories, "
        f"{len(data.questions)} questions, now {data.now.isoformat()} (unless a "
        "question gives its own); default pools; a question passes when every "
        "wanted id loads and no unwanted one does"
    )
    print("\n".join(table(results)))
    if args.verbose:
        print("\n".join(failures(results)))
    if args.json is not None:
        args.json.write_text(
            json.dumps(as_json(results), indent=2) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
