"""The namespace's statistics for the lexical ranking, kept entry by entry:
how many entries, their total length, each term's document frequency and
holders, and what the one-loop recall scores each entry by (read once, when
it enters).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable
from datetime import datetime
from itertools import chain
from typing import Any, Optional

import poolsplit
from poolsplit import Context, Entry, Scorer

from ._relevance import Relevance, _without_project, leaves_project_out, weighed
from ._terms import Times, _content, _message, terms

__all__ = ["Statistics"]

# (priority, created seconds, tags, project, always-scope, type): the fields
# the base score and the pools read, for an entry whose fields have their
# usual types; None for any other (its score is then default_scorer's own).
_Features = tuple[float, Optional[float], Optional[frozenset[str]], Any, bool, str]


def _features(entry: Entry) -> _Features | None:
    found = poolsplit.entry_features(entry)  # the core's fast-path decision
    kind = poolsplit.entry_type(entry)
    if found is None or not isinstance(kind, str):
        return None
    priority, seconds, tags, project = found
    distinct = frozenset(tags) if tags else None
    return (priority, seconds, distinct, project, poolsplit.is_always(entry), kind)


def _kind(entry: Entry) -> object:
    """The entry's type as a dict key (an unhashable one as its repr)."""
    kind = poolsplit.entry_type(entry)
    try:
        hash(kind)
    except TypeError:
        return repr(kind)
    return kind


def _decrement(counts: dict[Any, int], key: object) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


# ===========================================================================
# The namespace's statistics, kept entry by entry
# ===========================================================================


class Statistics:
    """Document count, total length and document frequencies of a namespace.

    >>> stats = Statistics()
    >>> stats.add({"content": "Ada paints sunsets"})
    >>> stats.add({"content": "Ada runs"})
    >>> stats.count, stats.frequency("ada"), stats.frequency("paint")
    (2, 2, 1)

    ``add`` and ``remove`` cost O(words of the entry); an entry's length is
    its number of distinct terms. Entries with equal content share one
    record (their terms are computed once). ``remove`` of an entry never
    added raises ``ValueError``: the statistics would silently drift.
    Not thread-safe: the owner (the store's snapshot) serialises writes.
    """

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.count = 0
        self.total_length = 0
        self._frequency: dict[str, int] = {}
        # content -> [its terms, how many counted entries hold it]
        self._contents: dict[str, list[Any]] = {}
        # term -> the distinct contents holding it (insertion-ordered)
        self._postings: dict[str, dict[str, None]] = {}
        # term -> length -> the distinct contents of that many terms holding
        # it (Relevance._visit weighs them a part at a time): made for a
        # term when a relevance first visits it (by_length), then kept by
        # add and remove (not at the load: benchmarks/README.md, warm38)
        self._by_length: dict[str, dict[int, dict[str, None]]] = {}
        # id(entry) -> what the fast recall scores it by (see recall())
        self._features: dict[int, _Features | None] = {}
        # the types of the counted always-scope entries (a pool list that
        # leaves one out makes the core warn by position: it reads them all)
        self._always_types: dict[object, int] = {}
        self._types: dict[object, int] = {}  # every counted entry's type
        # length -> how many distinct contents of that many terms (a few
        # keys): the shortest bounds a relevance's pruning (Relevance)
        self._length_counts: dict[int, int] = {}
        self.add_many(entries)

    @property
    def types(self) -> Iterable[object]:
        """The types of the counted entries (an unhashable one as its repr)."""
        return self._types.keys()

    def frequency(self, term: str) -> int:
        """How many counted entries hold ``term``."""
        return self._frequency.get(term, 0)

    def terms_of(self, content: str) -> frozenset[str]:
        """The terms of a content, from the record when it is counted."""
        record = self._contents.get(content)
        return terms(content) if record is None else record[0]

    def holders(self, term: str) -> Collection[str]:
        """The distinct counted contents holding ``term`` (none if none)."""
        return self._postings.get(term, {}).keys()

    def streams_of(self, content: str) -> frozenset[tuple[str, int]]:
        """(term, length) for each term of a content, its length being its
        number of terms: what a recall index files the content under, so
        that :meth:`Relevance.bounds` bounds each such stream's factor."""
        found = self.terms_of(content)
        length = len(found)
        return frozenset((term, length) for term in found)

    def add(self, entry: Entry) -> None:
        """Count ``entry`` (a stored entry dict)."""
        self.add_many((entry,))

    def add_many(self, entries: Iterable[Entry]) -> None:
        """Count each of ``entries``, as :meth:`add` one at a time would.

        The one place entries are counted (``add`` is a batch of one). A
        snapshot's load counts its 10,000 entries in one call: the
        document frequencies are tallied at C speed over all their terms
        (collections.Counter), not term by term in Python.
        """
        batch = list(entries)
        # Each content read first: a str() that raises changes nothing.
        texts = [_content(entry) for entry in batch]
        contents, features = self._contents, self._features
        types, always_types = self._types, self._always_types
        counted: list[frozenset[str]] = []  # each entry's terms
        fresh: list[str] = []  # the contents not counted yet
        for entry, content in zip(batch, texts):
            record = contents.get(content)
            if record is None:
                record = contents[content] = [terms(content), 0]
                fresh.append(content)
            record[1] += 1
            counted.append(record[0])
            found_features = features[id(entry)] = _features(entry)
            kind = _kind(entry)
            types[kind] = types.get(kind, 0) + 1
            if found_features is None or found_features[4]:
                always_types[kind] = always_types.get(kind, 0) + 1
        if fresh:
            self._post(fresh)
        self.count += len(counted)
        self.total_length += sum(map(len, counted))
        frequency = self._frequency
        for term, times in Counter(chain.from_iterable(counted)).items():
            frequency[term] = frequency.get(term, 0) + times

    def _post(self, fresh: Iterable[str]) -> None:
        """File contents new to the statistics under their terms."""
        postings, lengths = self._postings, self._length_counts
        contents = self._contents
        for content in fresh:
            found = contents[content][0]
            for term in found:  # (get first: setdefault builds a dict a term)
                holders = postings.get(term)
                if holders is None:
                    postings[term] = {content: None}
                else:
                    holders[content] = None
            if self._by_length:
                self._file_by_length(content, found)
            lengths[len(found)] = lengths.get(len(found), 0) + 1

    def remove(self, entry: Entry) -> None:
        """Stop counting ``entry``, counted before by :meth:`add`.

        Raises:
            ValueError: no counted entry has this content.
        """
        content = _content(entry)
        record = self._contents.get(content)
        if record is None:
            raise ValueError(
                f"entry {entry.get('id')!r}: its content is not counted, "
                "so it cannot be removed"
            )
        found: frozenset[str] = record[0]
        kind = _kind(entry)
        _decrement(self._types, kind)
        if self._features.pop(id(entry), None) is None or poolsplit.is_always(entry):
            _decrement(self._always_types, kind)
        record[1] -= 1
        if record[1] == 0:
            del self._contents[content]
            _decrement(self._length_counts, len(found))
            length, by_length = len(found), self._by_length
            for term in found:
                holders = self._postings[term]
                del holders[content]
                if not holders:
                    del self._postings[term]
                of_term = by_length.get(term)
                if of_term is not None:
                    del of_term[length][content]
                    if not of_term[length]:
                        del of_term[length]
                    if not of_term:
                        del by_length[term]
        self.count -= 1
        self.total_length -= len(found)
        frequency = self._frequency
        for term in found:
            _decrement(frequency, term)

    def _file_by_length(self, content: str, found: frozenset[str]) -> None:
        """File a new content under its terms' lengths already made."""
        length = len(found)
        for term in found:
            of_term = self._by_length.get(term)
            if of_term is not None:
                of_term.setdefault(length, {})[content] = None

    def by_length(self, term: str) -> dict[int, dict[str, None]]:
        """The distinct contents holding ``term`` (a counted one), by their
        number of terms; made on the first call, then kept by the writes."""
        found = self._by_length.get(term)
        if found is None:
            found = self._by_length[term] = {}
            contents = self._contents
            for content in self._postings[term]:
                found.setdefault(len(contents[content][0]), {})[content] = None
        return found

    def by_length_of_every_term(self) -> None:
        """Make :meth:`by_length` of every counted term at once, in one pass
        over the contents (the same dicts, up to order; then kept by the
        writes). A store's snapshot does it when it builds its recall index
        (its second recall): a relevance's first visit of a term made it
        then, in most warm recalls of a fresh process (benchmarks/README.md,
        warm38)."""
        made: dict[str, dict[int, dict[str, None]]] = {
            term: {} for term in self._postings if term not in self._by_length
        }
        if not made:
            return
        for content, record in self._contents.items():
            found: frozenset[str] = record[0]
            length = len(found)
            for term in found:
                of_term = made.get(term)
                if of_term is not None:
                    held = of_term.get(length)
                    if held is None:
                        of_term[length] = {content: None}
                    else:
                        held[content] = None
        self._by_length.update(made)

    def idf(self, term: str) -> float:
        """Lucene's BM25 idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``; 0 for a
        term no counted entry holds (it can rank nothing)."""
        n = self._frequency.get(term, 0)
        if n == 0:
            return 0.0
        return math.log(1.0 + (self.count - n + 0.5) / (n + 0.5))

    def relevance(
        self,
        message: str,
        now: datetime | None = None,
        *,
        times: Times | None = None,
    ) -> Relevance:
        """The message's terms weighed once, for scoring many entries; with
        ``now`` (or ``windows``), the times the message names too (see
        :class:`Relevance`)."""
        return Relevance(self, message, now, times=times)

    def scorer(
        self, context: Context | None, *, relevance: Relevance | None = None
    ) -> Scorer:
        """A ``poolsplit`` scorer for this context (see the module docstring).

        The base is ``poolsplit.default_scorer`` with the context's ``tags``
        and ``project`` and no message, on the entry without its project
        when the context names none; the message's relevance is weighed
        here, once. The scorer scores an entry for this context only (the
        core hands it back the context it was built for).
        """
        context = {} if context is None else context
        if relevance is None:
            relevance = self.relevance(_message(context))
        base_context = {key: context[key] for key in context if key != "message"}
        default_scorer = poolsplit.default_scorer
        factor = relevance.factor
        no_project = leaves_project_out(context)

        def score(entry: Entry, _context: Context | None, /, *, now: datetime) -> float:
            based = entry
            if no_project and entry.get("project") is not None:
                based = _without_project(entry)
            return weighed(default_scorer(based, base_context, now=now), factor(entry))

        return score
