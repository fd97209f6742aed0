"""What a process shares between its stores: one backend per database, and
the snapshots within one memory budget.

A server serving many tenants opens one :class:`~poolsplit_memory.store.Store`
per namespace. Each store gets a :class:`Handle` on the one backend of its
database (same kind, place, busy timeout and pool size): on PostgreSQL one
pool of connections, on a SQLite file one writer and one reader, whatever the
number of namespaces. The backend is closed when its last handle is; a
``:memory:`` database is never shared (a second one is another database).

The stores' snapshots (the loaded candidates a recall ranks) live in one
:class:`Snapshots` cache per process, bounded by an estimate of their bytes:
the least recently used snapshot leaves when the total passes the budget and
is read again from the database by its store's next recall. A namespace the
process has not served holds nothing here.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final, TypeVar

from poolsplit_memory._types import (
    Backend,
    ReadTx,
    Since,
    StoreUnavailable,
    WriteTx,
)

T = TypeVar("T")

# ===========================================================================
# One backend per database and process
# ===========================================================================

# Re-entrant: a store dropped without close() is released by a finalizer
# (store.py), which a garbage collection may run in a thread that already
# holds the lock (inside ``make()`` of shared_backend, say).
_lock = threading.RLock()
# (kind, where, busy_ms, pool_size, standby) -> [backend, handles open]
_open: dict[tuple[str, str, int, int, str | None], list[Any]] = {}


class Handle:
    """One store's use of a shared backend: the backend's calls until
    :meth:`close`, after which they raise ``store is closed`` (other stores
    on the database go on). Anything else is read from the backend."""

    def __init__(
        self, backend: Backend, key: tuple[str, str, int, int, str | None] | None
    ):
        self.backend = backend
        self.url = backend.url
        self._key = key
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    @property
    def rows_read(self) -> int:
        return self.backend.rows_read

    @property
    def scrub_pending(self) -> bool:
        return self.backend.scrub_pending

    def _check(self) -> None:
        if self._closed:
            raise StoreUnavailable("store is closed", self.url)

    def write(self, namespace: str, work: Callable[[WriteTx], T]) -> T:
        self._check()
        return self.backend.write(namespace, work)

    def read(self, namespace: str, work: Callable[[ReadTx], T]) -> T:
        self._check()
        return self.backend.read(namespace, work)

    def version(self, namespace: str) -> object:
        self._check()
        return self.backend.version(namespace)

    def since(
        self,
        namespace: str,
        after: int | None,
        types: Sequence[str] | None,
        most: int,
    ) -> Since:
        self._check()
        return self.backend.since(namespace, after, types, most)

    def signal_at(self, namespace: str, position: int) -> object | None:
        self._check()
        return self.backend.signal_at(namespace, position)

    def scrub(self) -> None:
        self._check()
        self.backend.scrub()

    def close(self) -> None:
        with _lock:
            if self._closed:
                return
            self._closed = True
            last = True
            if self._key is not None:
                held = _open[self._key]
                held[1] -= 1
                last = held[1] == 0
                if last:
                    del _open[self._key]
        if last:
            self.backend.close()
        elif self.backend.scrub_pending:  # what close would have tried
            self.backend.scrub()


def shared_backend(
    key: tuple[str, str, int, int, str | None], make: Callable[[], Backend]
) -> Handle:
    """A handle on this process's backend of the database ``key`` (kind,
    place, busy timeout, pool size, standby), made by ``make()`` on first use and
    closed with its last handle.

    Raises:
        StoreUnavailable, InvalidInput: what ``make`` raises.
    """
    with _lock:  # made under the lock: a second first use waits for it
        held = _open.get(key)
        if held is None:
            held = _open[key] = [make(), 0]
        held[1] += 1
        return Handle(held[0], key)


def own_backend(backend: Backend) -> Handle:
    """A handle on a backend no other store shares (``:memory:``)."""
    return Handle(backend, None)


def open_backends() -> int:
    """How many shared backends this process holds open (for tests)."""
    with _lock:
        return len(_open)


# ===========================================================================
# The snapshots, within a memory budget
# ===========================================================================

# 256 MiB: about 20 namespaces of 1,000 chat turns (~13 MB each, estimated)
# per process (store.py estimates a snapshot's bytes; memory/README.md's "Many
# tenants, several instances").
DEFAULT_SNAPSHOT_BUDGET: Final = 256 * 1024 * 1024

_owners = itertools.count()
Key = tuple[int, Hashable]  # (the store's owner key, what it keys by)


class Snapshots:
    """Every store's snapshots, least recently used first, at most
    ``budget`` estimated bytes in all (the one just stored is kept even when
    it alone is larger: its recall needs it). Thread-safe; each store still
    changes its own snapshots under its own lock."""

    def __init__(self, budget: int = DEFAULT_SNAPSHOT_BUDGET) -> None:
        self.budget = budget
        self._lock = threading.RLock()  # re-entrant: see _lock above
        self._items: collections.OrderedDict[Key, tuple[Any, int]] = (
            collections.OrderedDict()
        )
        self.total = 0  # estimated bytes held
        self.evicted = 0  # snapshots that left for the budget (for tests)

    @staticmethod
    def owner() -> int:
        """A key no other store has (a store's snapshots are keyed by it)."""
        return next(_owners)

    def get(self, key: Key) -> Any:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: Key, snapshot: Any, size: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.total -= old[1]
            self._items[key] = (snapshot, size)
            self.total += size
            while self.total > self.budget and len(self._items) > 1:
                _, (_, freed) = self._items.popitem(last=False)
                self.total -= freed
                self.evicted += 1

    def count(self, owner: int) -> int:
        """How many snapshots of this owner are held."""
        with self._lock:
            return sum(1 for key in self._items if key[0] == owner)

    def oldest_of(self, owner: int) -> Key | None:
        """The key of this owner's least recently used snapshot."""
        with self._lock:
            return next((k for k in self._items if k[0] == owner), None)

    def drop(self, key: Key) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.total -= old[1]

    def drop_owner(self, owner: int) -> None:
        """Forget an owner's snapshots (its store closed or was collected)."""
        with self._lock:
            # (over a copy of the keys: a collection in the comprehension
            # may run a dropped store's finalizer, which drops its own)
            for key in [k for k in list(self._items) if k[0] == owner]:
                self.drop(key)


snapshots = Snapshots()  # this process's
