"""A LangGraph ``BaseStore`` whose items are the entries of a poolsplit store.

LangGraph's convention for a memory backend (the ``langgraph-store-*``
packages): ``create_agent(..., store=PoolsplitStore(url))`` makes the
graph's store the memory store; docs/langgraph.md is the reference.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, Final, Optional

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from poolsplit import Pool, TokenCounter, default_token_counter

from poolsplit_memory import (
    DEFAULT_MAX_ENTRY_TOKENS,
    InvalidInput,
    Recall,
    Store,
    open_store,
)
from poolsplit_memory._trust import PROVENANCE, UPDATED_AT, WRITTEN_AT

# The poolsplit namespace listing the LangGraph ones written (an entry each,
# its id the name). No item's namespace is named so: LangGraph refuses "."
# in a label, so a joined name never starts with one.
_REGISTRY: Final = ".langgraph-namespaces"
_EPOCH: Final = datetime.fromtimestamp(0, timezone.utc)


def _name(namespace: tuple[str, ...]) -> str:
    """The poolsplit namespace of a LangGraph one: its labels joined by "."."""
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidNamespaceError(
            f"namespace must be a non-empty tuple, got {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(
                f"namespace labels must be non-empty str without '.', got {label!r}"
            )
    return ".".join(namespace)


def _item(namespace: tuple[str, ...], entry: Mapping[str, Any]) -> SearchItem:
    """An entry as an item: without the provenance the store stamped, which
    gives ``created_at`` and ``updated_at``."""
    stamps = [entry.get(WRITTEN_AT), entry.get(UPDATED_AT) or entry.get(WRITTEN_AT)]
    created, updated = (
        datetime.fromisoformat(s) if isinstance(s, str) else _EPOCH for s in stamps
    )
    value = {k: v for k, v in entry.items() if k not in PROVENANCE}
    return SearchItem(namespace, str(entry.get("id")), value, created, updated)


def _compare(value: Any, wanted: Any) -> bool:
    """``filter``'s rule, as LangGraph's stores apply it: equality, nested
    dicts key by key, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``."""
    if isinstance(wanted, dict) and any(str(k).startswith("$") for k in wanted):
        return all(_operator(value, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(
            _compare(value.get(k), v) for k, v in wanted.items()
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op in ("$eq", "$ne"):
        return (value == operand) is (op == "$eq")
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"filter: unsupported operator {op!r}")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    a, b = float(value), float(operand)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path, size = tuple(condition.path), len(namespace)
    if size < len(path):
        return False
    start = 0 if condition.match_type == "prefix" else size - len(path)
    return all(p in ("*", n) for n, p in zip(namespace[start:], path))


def _joins(first: Op, op: Op) -> bool:
    """Whether ``op`` puts a value into ``first``'s namespace."""
    return (
        isinstance(op, PutOp)
        and op.value is not None
        and isinstance(first, PutOp)
        and op.namespace == first.namespace
    )


def _line(namespace: tuple[str, ...], op: PutOp) -> str:
    """The JSONL line of a put, or InvalidInput naming its key."""
    key, value, where = op.key, op.value, f"item {op.key!r} of {namespace!r}"
    if op.ttl is not None:
        raise NotImplementedError("ttl: PoolsplitStore does not support TTL")
    if not isinstance(value, Mapping):
        raise InvalidInput("value", f"{where} must be a dict", id=key)
    if value.get("id", key) != key:
        raise InvalidInput("id", f"{where} has id {value['id']!r}", id=key)
    for field in PROVENANCE:
        if field in value:
            raise InvalidInput(
                field, f"{where}: stamped by the store, never put", id=key
            )
    try:
        return json.dumps({**value, "id": key}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("value", f"{where} is not JSON: {exc}", id=key) from None


class PoolsplitStore(BaseStore):
    """A LangGraph ``BaseStore`` over one poolsplit database (a SQLite file
    or PostgreSQL; ``":memory:"`` is refused: it is a database per
    namespace): a namespace is a poolsplit namespace (labels joined by
    "."), an item an entry whose ``id`` is its key. The options are
    ``open_store``'s, for every namespace. No TTL (``supports_ttl`` False).
    docs/langgraph.md states what each operation means.
    """

    def __init__(
        self,
        url: str,
        *,
        pools: Iterable[Pool] | None = None,
        ranking: str = "lexical",
        writer: str | None = None,
        token_counter: TokenCounter = default_token_counter,
        max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
    ) -> None:
        if url == ":memory:":
            raise InvalidInput(
                "url", "':memory:' is a database per namespace; use a file"
            )
        self.url = url
        self._options: dict[str, Any] = {
            "pools": None if pools is None else list(pools),
            **{"ranking": ranking, "writer": writer, "token_counter": token_counter},
            "max_entry_tokens": max_entry_tokens,
        }
        self._stores: dict[str, Store] = {}
        self._registered: set[str] = set()
        self._lock = threading.Lock()
        self._registry = self._open(_REGISTRY)

    def _open(self, name: str) -> Store:
        with self._lock:
            if name not in self._stores:
                self._stores[name] = open_store(
                    self.url, namespace=name, **self._options
                )
            return self._stores[name]

    def store(self, namespace: tuple[str, ...]) -> Store:
        """The poolsplit ``Store`` of a LangGraph namespace (its whole API)."""
        return self._open(_name(namespace))

    def recall(
        self, namespace: tuple[str, ...], message: str, **options: Any
    ) -> Recall:
        """``Store.recall(message, **options)`` in ``namespace``."""
        return self.store(namespace).recall(message, **options)

    def close(self) -> None:
        """Close every poolsplit store this one opened."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()

    def __enter__(self) -> PoolsplitStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each operation in order, seeing those before it; consecutive puts
        of values into one namespace are one transaction."""
        results: list[Result] = []
        run: list[PutOp] = []
        for op in ops:
            if run and not _joins(run[0], op):
                self._put(run)
                run = []
            if isinstance(op, PutOp) and _joins(op, op):
                run.append(op)
            results.append(None if run else self._one(op))
        if run:
            self._put(run)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (a poolsplit store blocks)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self.store(op.namespace).get(op.key)
            return None if found is None else _item(op.namespace, found)
        if isinstance(op, PutOp):  # a delete
            self.store(op.namespace).forget(op.key)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            spaces = [
                space
                for space in self._namespaces()
                if all(_matches(space, c) for c in op.match_conditions or ())
            ]
            if op.max_depth is not None:
                spaces = sorted({space[: op.max_depth] for space in spaces})
            return spaces[op.offset : op.offset + op.limit]
        raise ValueError(f"ops: unknown operation {type(op).__name__}")

    def _put(self, ops: list[PutOp]) -> None:
        """Puts into one namespace, as one ``import_jsonl``: all or nothing."""
        space = ops[0].namespace
        store = self.store(space)
        lines = "\n".join(_line(space, op) for op in ops)
        try:
            written = store.import_jsonl(io.StringIO(lines), replace=True)
        except InvalidInput as exc:
            key = ops[(exc.line or 1) - 1].key
            where = f"item {key!r} of {space!r}"
            raise InvalidInput(exc.field, f"{where}: {exc}", id=key) from None
        if written < len({op.key for op in ops}):  # an active entry holds one
            why = [w for w in written.warnings if "idempotent" in w]
            raise InvalidInput("value", f"items of {space!r} not written: {why}")
        if store.namespace not in self._registered:
            line = {"id": store.namespace, "content": store.namespace.encode().hex()}
            self._registry.import_jsonl(io.StringIO(json.dumps(line)), replace=True)
            self._registered.add(store.namespace)

    def _entries(self, store: Store) -> Iterator[dict[str, Any]]:
        """Every entry of ``store``, page by page, oldest first."""
        cursor: Optional[str] = None  # noqa: UP045 - Python 3.9
        while True:
            page = store.list(limit=500, cursor=cursor)
            yield from page.entries
            cursor = page.next_cursor
            if cursor is None:
                return

    def _namespaces(self) -> list[tuple[str, ...]]:
        """The namespaces that hold an item, in order: O(namespaces) reads."""
        named = (tuple(str(e["id"]).split(".")) for e in self._entries(self._registry))
        return sorted(n for n in named if self.store(n).list(limit=1).entries)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        """Every item under the prefix (oldest first per namespace), or with
        ``query`` what the store's recall injects for it, in its order;
        then ``filter``, ``offset``, ``limit``."""
        prefix, found = tuple(op.namespace_prefix), []
        for space in (n for n in self._namespaces() if n[: len(prefix)] == prefix):
            entries: Iterable[Mapping[str, Any]] = self._entries(self.store(space))
            if op.query is not None:
                chosen = self.recall(space, op.query).pools.values()
                entries = [entry for pool in chosen for entry in pool]
            found += [
                _item(space, e)
                for e in entries
                if all(_compare(e.get(k), v) for k, v in (op.filter or {}).items())
            ]
        return found[op.offset : op.offset + op.limit]
