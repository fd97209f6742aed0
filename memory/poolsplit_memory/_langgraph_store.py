"""A LangGraph ``BaseStore`` whose items are the entries of a poolsplit store.

LangGraph's convention for a memory backend (as the ``langgraph-store-*``
packages): ``create_agent(..., store=PoolsplitStore(url))`` makes the graph's
store the memory store, and the adapters of ``poolsplit_memory.langgraph``
recall through its index (``Store.recall``) instead of reading items.
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

# The poolsplit namespace that lists the LangGraph namespaces written (one
# entry each, its id the namespace's name). A name of a LangGraph namespace
# never starts with "." (LangGraph refuses "." in a label), so no item's
# namespace can be this one.
_REGISTRY: Final = ".langgraph-namespaces"
_PAGE: Final = 500  # Store.list's largest page


def _name(namespace: tuple[str, ...]) -> str:
    """The poolsplit namespace of a LangGraph one: its labels joined by "."."""
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidNamespaceError(
            f"namespace must be a non-empty tuple of str, got {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(
                f"namespace labels must be non-empty str without '.', got "
                f"{label!r} in {namespace!r}"
            )
    return ".".join(namespace)


def _stamp(entry: Mapping[str, Any], field: str, fallback: datetime) -> datetime:
    text = entry.get(field)
    return datetime.fromisoformat(text) if isinstance(text, str) else fallback


def _item(namespace: tuple[str, ...], entry: Mapping[str, Any]) -> SearchItem:
    """The item of a stored entry: its value without the provenance the
    store stamped, which gives ``created_at`` and ``updated_at``."""
    created = _stamp(entry, WRITTEN_AT, datetime.fromtimestamp(0, timezone.utc))
    value = {k: v for k, v in entry.items() if k not in PROVENANCE}
    return SearchItem(
        namespace,
        str(entry.get("id")),
        value,
        created,
        _stamp(entry, UPDATED_AT, created),
    )


def _compare(value: Any, wanted: Any) -> bool:
    """``filter``'s rule, as LangGraph's stores apply it: equality, nested
    dicts key by key, or ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``."""
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
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else None
    if part is None:
        part = namespace[len(namespace) - len(path) :]
    return all(p in ("*", n) for n, p in zip(part, path))


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
    stamped = [field for field in PROVENANCE if field in value]
    if stamped:
        raise InvalidInput(
            stamped[0], f"{where}: stamped by the store, never put", id=key
        )
    try:
        return json.dumps({**value, "id": key}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("value", f"{where} is not JSON: {exc}", id=key) from None


class PoolsplitStore(BaseStore):
    """A LangGraph ``BaseStore`` over one poolsplit database (SQLite or
    PostgreSQL): each LangGraph namespace is a poolsplit namespace (its
    labels joined by "."), each item an entry whose ``id`` is the key.

    Items: ``put`` stores the value as the entry (``import_jsonl``'s rule,
    replacing the key's entry), ``get`` and ``search`` return it with
    ``id`` set to the key and without the provenance the store stamps;
    ``created_at`` and ``updated_at`` are those stamps. A value that is not
    a dict, gives another ``id`` or carries provenance is refused
    (``InvalidInput`` naming the namespace and key); a value that is a dict
    but not a loadable entry (no ``content``) is kept as it is and a recall
    lists it in ``skipped``; a value the store's write rule refuses (content
    over ``max_entry_tokens``, NUL characters) or one whose memory an active
    entry already holds under another key raises ``InvalidInput``, nothing
    written: nothing is dropped silently. No TTL (``supports_ttl`` False,
    as ``BaseStore``'s default: ``put(ttl=...)`` raises). ``index`` is
    ignored: the store indexes every entry's content itself.

    ``search(prefix, query=...)`` ranks by the store's own recall: the
    entries ``Store.recall(query)`` would inject for that message in each
    namespace under the prefix, in recall order (``score`` None), then
    ``filter``, ``offset`` and ``limit``. Without ``query``, every item
    under the prefix, oldest first per namespace, namespaces in order.
    A batch runs its operations in order, each seeing the ones before.
    ``":memory:"`` is refused: it opens a database per namespace.
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
                "url", "':memory:' opens one database per namespace; use a file"
            )
        self.url = url
        self._options: dict[str, Any] = {
            "pools": None if pools is None else list(pools),
            "ranking": ranking,
            "writer": writer,
            "token_counter": token_counter,
            "max_entry_tokens": max_entry_tokens,
        }
        self._stores: dict[str, Store] = {}
        self._registered: set[str] = set()
        self._lock = threading.Lock()
        self._registry = self._open(_REGISTRY)

    def _open(self, name: str) -> Store:
        with self._lock:
            found = self._stores.get(name)
            if found is None:
                found = open_store(self.url, namespace=name, **self._options)
                self._stores[name] = found
            return found

    def store(self, namespace: tuple[str, ...]) -> Store:
        """The poolsplit ``Store`` of a LangGraph namespace (remember,
        update, explain, history: the whole store API)."""
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

    # --- BaseStore ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each operation in order (GetOp, PutOp, SearchOp, ListNamespacesOp);
        consecutive puts of values into one namespace are one transaction."""
        results: list[Result] = []
        run: list[PutOp] = []
        for op in ops:
            if run and not _joins(run[0], op):
                self._put(run)
                run = []
            if isinstance(op, PutOp) and _joins(op, op):
                run.append(op)
                results.append(None)
            else:
                results.append(self._one(op))
        if run:
            self._put(run)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the store's calls block)."""
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
            return self._list_namespaces(op)
        raise ValueError(f"ops: unknown operation {type(op).__name__}")

    def _put(self, ops: list[PutOp]) -> None:
        """Puts of values into one namespace, in one ``import_jsonl``."""
        space = ops[0].namespace
        store = self.store(space)
        lines = [_line(space, op) for op in ops]
        try:
            written = store.import_jsonl(io.StringIO("\n".join(lines)), replace=True)
        except InvalidInput as exc:
            key = ops[(exc.line or 1) - 1].key
            raise InvalidInput(
                exc.field, f"item {key!r} of {space!r}: {exc}", id=key
            ) from None
        if written < len({op.key for op in ops}):  # an active entry holds one
            why = [w for w in written.warnings if "idempotent" in w]
            raise InvalidInput("value", f"items of {space!r} not written: {why}")
        self._register(store.namespace)

    def _register(self, name: str) -> None:
        if name in self._registered:
            return
        line = json.dumps({"id": name, "content": name.encode("utf-8").hex()})
        self._registry.import_jsonl(io.StringIO(line), replace=True)
        self._registered.add(name)

    def _entries(self, store: Store) -> Iterator[dict[str, Any]]:
        """Every entry of ``store``, page by page, oldest first."""
        cursor: Optional[str] = None  # noqa: UP045 - Python 3.9
        while True:
            page = store.list(limit=_PAGE, cursor=cursor)
            yield from page.entries
            cursor = page.next_cursor
            if cursor is None:
                return

    def _namespaces(self) -> list[tuple[str, ...]]:
        """The namespaces that hold an item, in order."""
        found = []
        for entry in self._entries(self._registry):
            namespace = tuple(str(entry["id"]).split("."))
            if self.store(namespace).list(limit=1).entries:
                found.append(namespace)
        return sorted(found)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        spaces = [n for n in self._namespaces() if n[: len(prefix)] == prefix]
        found: list[SearchItem] = []
        for space in spaces:
            if op.query is None:
                entries: Iterable[Mapping[str, Any]] = self._entries(self.store(space))
            else:
                recalled = self.recall(space, op.query).pools.values()
                entries = [entry for chosen in recalled for entry in chosen]
            found += [
                _item(space, entry)
                for entry in entries
                if all(_compare(entry.get(k), v) for k, v in (op.filter or {}).items())
            ]
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [
            space
            for space in self._namespaces()
            if all(_matches(space, c) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            spaces = sorted({space[: op.max_depth] for space in spaces})
        return spaces[op.offset : op.offset + op.limit]
