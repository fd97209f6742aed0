"""Interleaved A/B/C of issue 35's warm lexical recall at 10,000 entries.

    python benchmarks/relevance_ab.py [--entries 10000] [--turns 41]
                                      [--aged | --spread]

A namespace of ``conversation.memories`` (as ``benchmarks/store_scale.py``
fills it: default priority, every entry the same ``created``; ``--aged``:
each its own, minutes to hours apart, as ``langgraph_turn.py``; ``--spread``:
``mcp_recall.py``'s spread store and its four messages, priorities 1-9 and
dates over a year, where the bases do not tie) is counted
by a ``Statistics`` and filed in a recall ``Index`` as the store does
(``terms=stats.streams_of``, the default pools, floored). Each turn asks a
new question of three variants, in rotating order (reversed every other
round, so that no variant always runs right after the same one: the one
after reads the statistics the one before brought into the caches):

- A, before: the relevance weighs every content sharing a term
  (``Relevance(..., complete=True)``, kept for the hybrid ranking) and the
  index walks every stream by base (``_Call.words_only`` forced off: the
  groups' streams too, each word stream best base first);
- B: the relevance as shipped (rarest terms first, until ``best`` is
  exact; the rest bounded by their idf), the walk of A;
- C, as shipped: B's relevance, and the walk of the word streams alone,
  each by factor once first reached;
- D, with ``--off MECHANISM``: C without one of its mechanisms, to show
  that it earns its place: ``union`` (the call builds the union of the
  word streams' entries, as a walk of every stream needs, not
  ``_index._Union``); ``split`` (the relevance weighs each content of a
  visited term one by one, not once per part of ``_ranking.split``);
  ``take`` (a stream walked by factor whose bases tie pushes each entry
  it gives back with its own bound, as any other stream does, instead of
  giving it at once); ``weighed`` (the sort by factor splits every stream
  by the message's other terms, not reading the shares the relevance
  weighed already); ``by-length`` (the statistics make a term's contents
  by length when a relevance first visits it, not all at once as the
  store does when it builds its index: D has statistics and an index of
  its own); C / D, paired, is printed too.
- D, with ``--against FILE``: C's relevance and statistics, the recall
  index of another ``_index.py`` (e.g. ``git show
  REV:memory/poolsplit_memory/_index.py > /tmp/before.py``): an A/B of
  the index's code before and after a change.

Every turn the variants' recalls are checked equal; in the five untimed turns
the relevances' ``best``, and every counted content's ``share`` and
``factor``, are checked equal and each content's own stream bound at
least its factor. Printed: the medians of the relevance alone and of
relevance + recall, in CPU time of this process (``time.process_time``:
the machine is shared, and a preempted wall clock is not this code's
time), and each variant's paired ratio to A (the median of turn-by-turn
ratios); with ``--off``, C / D paired and of the totals (the questions
that cost most weigh in the latter). Nothing is asserted about time;
pytest never collects this. Needs poolsplit-memory installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any

from conversation import memories, questions
from mcp_recall import MESSAGES
from mcp_recall import entries as spread_entries
from poolsplit_memory import _index, default_pools
from poolsplit_memory._index import Index
from poolsplit_memory._ranking import Relevance, Statistics, floored

import poolsplit

AGE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
VARIANTS = "ABC"


def namespace(
    size: int, shape: str, *, by_length: bool = True
) -> tuple[Statistics, Index, list[Any]]:
    """The counted entries, their index and the default pools."""
    entries = []
    made = spread_entries(size, "spread") if shape == "spread" else memories(size)
    for entry in made:
        if shape == "same age":
            entry["created"] = AGE.isoformat()
        entries.append(entry)
    stats = Statistics(entries)
    index = Index(terms=stats.streams_of)
    index.add_many(list(enumerate(entries)))
    if by_length:  # as the store's snapshot does once it builds its index
        stats.by_length_of_every_term()
    types = {str(entry["type"]) for entry in entries}
    return stats, index, default_pools(types)


def other_index(path: str, stats: Statistics, size: int, shape: str) -> Any:
    """``--against``: the recall index of the ``_index.py`` at ``path``,
    filled with the namespace's entries over ``stats``."""
    spec = importlib.util.spec_from_file_location("poolsplit_memory._against", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    _, index, _ = namespace(size, shape, by_length=False)  # its entries
    other = module.Index(terms=stats.streams_of)
    other.add_many([(key, index.entry(key)) for key in range(len(index))])
    return other


def untied(index: Index) -> Any:
    """``--off take``: ``index._by_factor`` that never marks a stream tied."""
    by_factor = Index._by_factor

    def sorted_by_factor(stream: Any, call: Any) -> None:
        by_factor(index, stream, call)
        stream.tied = False

    return sorted_by_factor


def by_base(index: Index) -> Any:
    """``index._call`` with ``words_only`` off: every stream, by base."""
    call = index._call

    def plain(*args: Any) -> Any:
        got = call(*args)
        if got is not None:
            got.words_only = False
        return got

    return plain


def without(index: Index, mechanism: str) -> Any:
    """``index._call`` whose call lacks ``mechanism`` (D)."""
    call = index._call

    def plain(*args: Any) -> Any:
        got = call(*args)
        if mechanism == "union" and isinstance(got.message_boosted, _index._Union):
            got.message_boosted = set().union(*got.message_boosted._sets)
        return got

    return plain


def each_visit(self: Any, every: bool) -> None:
    """``--off split``: ``Relevance._visit`` as before ``_ranking.split``,
    each content of a visited term weighed on its own."""
    stats, order, left = self._stats, self._order, self._left
    postings, contents = stats._postings, stats._contents
    share, owned, parts = self._share, self._owned, self._parts
    ceiling = self._ceiling
    most_part = self._most_part()
    best = max(owned.values(), default=0.0)
    while self._visited < len(order):
        at = self._visited
        if not every and left[at] * most_part <= best:
            return
        term = order[at]
        held = postings[term]
        for content in held.keys() - share.keys() if share else held:
            own = contents[content][0]
            length = len(own)
            part = parts.get(length)
            if part is None:
                part = parts[length] = self._part(length)
            r = share[content] = self._shared_idf(own) * part / ceiling
            stream = (term, length)
            if r > owned.get(stream, -1.0):
                owned[stream] = r
        best = max(owned.values(), default=0.0)
        self._visited = at + 1


def turn(
    stats: Statistics,
    index: Index,
    pools: Any,
    message: str,
    variant: str,
    off: str = "",
) -> tuple[float, float, Relevance, dict[str, list[Any]]]:
    """(relevance s, relevance + recall s, the relevance, the recall)."""
    shipped = index._call
    if variant in "AB":
        index._call = by_base(index)
    elif variant == "D" and off == "union":
        index._call = without(index, off)
    shipped_visit = Relevance._visit
    shipped_weighed = Relevance.weighed_shares
    if variant == "D" and off == "split":
        Relevance._visit = each_visit
    elif variant == "D" and off == "take":
        index._by_factor = untied(index)
    elif variant == "D" and off == "weighed":
        Relevance.weighed_shares = property(lambda self: {})
    try:
        started = time.process_time()
        relevance = Relevance(stats, message, NOW, complete=variant == "A")
        weighed = time.process_time()
        got = index.recall(
            floored(pools, relevance),
            {"message": message},
            now=NOW,
            token_counter=poolsplit.default_token_counter,
            relevance=relevance,
        )
        done = time.process_time()
    finally:
        index._call = shipped
        Relevance._visit = shipped_visit
        Relevance.weighed_shares = shipped_weighed
        vars(index).pop("_by_factor", None)
    return weighed - started, done - started, relevance, got


def same(stats: Statistics, a: Relevance, b: Relevance) -> bool:
    """Equal best, and for every counted content equal share and factor, and
    B's bound of its own stream (its rarest shared term's) at least its
    factor (or the factor 0: not loaded)."""
    if a.best != b.best:
        return False
    postings, bounds = stats._postings, b.bounds()
    for content, (own, _) in stats._contents.items():
        entry = {"content": content}
        factor = b.factor(entry)
        if a.share(entry) != b.share(entry) or a.factor(entry) != factor:
            return False
        shared = [t for t in b.weights if t in own]
        if factor and shared:
            rarest = min(shared, key=lambda t: (len(postings[t]), t))
            if bounds.get((rarest, len(own)), -1.0) < factor:
                return False
    return True


def d_namespace(
    args: argparse.Namespace, stats: Statistics, index: Index, shape: str
) -> tuple[Statistics, Any]:
    """D's statistics and index: C's, or their own (``--off by-length``,
    ``--against``)."""
    if args.off == "by-length":
        made, own, _ = namespace(args.entries, shape, by_length=False)
        return made, own
    if args.against:
        return stats, other_index(args.against, stats, args.entries, shape)
    return stats, index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=41)
    parser.add_argument(
        "--off",
        choices=("union", "split", "take", "weighed", "by-length"),
        default="",
    )
    parser.add_argument("--against", metavar="FILE", default="")
    shapes = parser.add_mutually_exclusive_group()
    shapes.add_argument("--aged", action="store_true")
    shapes.add_argument("--spread", action="store_true")
    args = parser.parse_args()
    shape = "spread" if args.spread else "aged" if args.aged else "same age"
    stats, index, pools = namespace(args.entries, shape)
    other = d_namespace(args, stats, index, shape)
    asked = questions(args.turns + 5, seed=3)
    if args.spread:
        asked = [MESSAGES[n % len(MESSAGES)] for n in range(args.turns + 5)]
    variants = VARIANTS + ("D" if args.off or args.against else "")
    weighing: dict[str, list[float]] = {v: [] for v in variants}
    whole: dict[str, list[float]] = {v: [] for v in variants}
    for number, message in enumerate(asked):
        got: dict[str, Any] = {}
        turned = number % len(variants)
        order = variants[turned:] + variants[:turned]
        if number // len(variants) % 2:  # each variant after each other one
            order = order[::-1]
        for variant in order:
            own_stats, own_index = other if variant == "D" else (stats, index)
            got[variant] = turn(own_stats, own_index, pools, message, variant, args.off)
        ids = {
            variant: [[e["id"] for e in found[3][p.name]] for p in pools]
            for variant, found in got.items()
        }
        if any(ids[variant] != ids["A"] for variant in variants):
            raise SystemExit(f"turn {number}: the recalls differ for {message!r}")
        if number < 5:  # untimed; the relevances checked equal entry by entry
            if not all(same(stats, got["A"][2], got[v][2]) for v in variants[1:]):
                raise SystemExit(f"turn {number}: the relevances differ")
            continue
        for variant in variants:
            weighing[variant].append(got[variant][0])
            whole[variant].append(got[variant][1])
    print(f"{args.entries} entries ({shape}), {len(whole['A'])} turns, CPU ms")
    report(variants, weighing, whole, args)


def report(
    variants: str,
    weighing: dict[str, list[float]],
    whole: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    """Each variant's medians and paired ratio to A; C / D with a D."""
    for title, samples in (("relevance", weighing), ("relevance + recall", whole)):
        cells = []
        for variant in variants:
            ms = statistics.median(samples[variant]) * 1e3
            paired = statistics.median(
                b / a if a else 1.0 for a, b in zip(samples["A"], samples[variant])
            )
            cells.append(f"{variant} {ms:7.2f} ({paired:.2f}x A)")
        print(f"{title:19} " + "  ".join(cells))
    if "D" in variants:
        for title, samples in (("relevance", weighing), ("relevance + recall", whole)):
            paired = statistics.median(
                c / d if d else 1.0 for c, d in zip(samples["C"], samples["D"])
            )
            total = sum(samples["C"]) / sum(samples["D"])
            without = f"without {args.off}" if args.off else f"{args.against}'s index"
            print(
                f"C / D ({without}), {title}, paired: {paired:.2f}"
                f", of the totals: {total:.2f}"
            )


if __name__ == "__main__":
    main()
