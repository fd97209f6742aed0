"""LangChain and LangGraph: pooled memory, standing rules in the system message.

    pip install 'poolsplit-memory[langgraph]'

    from langchain.agents import create_agent
    from langgraph.store.memory import InMemoryStore
    from poolsplit_memory.langgraph import memory_middleware, remember_tool

    agent = create_agent(model, [remember_tool()], middleware=[memory_middleware()],
                         store=InMemoryStore())
    agent.invoke({"messages": [("user", "...")]}, {"configurable": {"user_id": "ada"}})

Entries live in any LangGraph ``BaseStore``, one item per entry (the item's
value is the entry, its key the entry's ``id``), under one namespace per user:
``("memories", user_label(config["configurable"]["user_id"]))`` unless
``namespace=`` says otherwise (:func:`user_label` escapes the ``.`` LangGraph
refuses in a label, so ``ada@example.com`` is a user too). Each turn sees
that namespace **exactly** (``search`` matches a prefix; items of
``("memories", "ada", "archive")`` are another namespace and never loaded for
``("memories", "ada")``) as it is now, fills the pools for the latest human
message and renders them in the frame of ``poolsplit_memory._frame``
(stored data, not instructions; a content can never forge a line). The
always-scope entries (standing rules) go after the agent's prompt into
**one** ``SystemMessage`` (several providers reject a second one); the rest
of the recall is retrieved context, sent for the call only as one
``HumanMessage`` just before the current turn, as LangChain's docs put
context read from a store ("Context engineering in agents", Messages: a
user message added in ``wrap_model_call``; the RAG tutorial puts retrieved
context in the user's turn). The ids injected per pool are in the system
message's ``additional_kwargs["poolsplit"]``, the context's in that
message's.

The namespace stays loaded between turns, per store object (at most
:data:`MAX_LOADED` namespaces each): its entries checked by the store's
rule, the lexical ranking's statistics and the recall index
``Store.recall`` uses, brought forward by the items that changed, so a
turn's cost does not grow with the namespace. How a turn finds what
changed depends on the store: LangGraph's ``InMemoryStore`` is compared in
place (its ``put`` makes a new item each time); ``PostgresStore`` and
``AsyncPostgresStore`` are asked one query on their own table, through
their own cursor: the namespace's row count and the key and ``updated_at``
of the rows stamped since the last read; the keys whose stamp is new are
read by ``GetOp``, and a count short of the keys loaded and new (a delete
or an expiry) reads the namespace whole. Where that table cannot be asked
(another schema, no rights; the first error is remembered per store), or
a sync turn has an ``AsyncPostgresStore``, they are probed by two searches
instead: their newest items (they order by ``updated_at``) and one item at
the offset the count says is the last. Any other store is read whole
(:func:`load_entries`' rule: one ``search`` that no order or missing
``offset`` can cut) and compared item by item. A rewrite with the same
key, by this process or another, is a change. What no ``put`` does is not
seen: a value edited in place, or a row changed by SQL without
``updated_at``.

``pools=None`` (every entry point's default) means the store's neutral
defaults, as ``Store.recall`` uses them: ``poolsplit_memory.DEFAULT_POOLS``
(one pool per common type) and a spill-over pool for every other type;
never the demo's pools. Pass your own list of ``poolsplit.Pool`` to change
them.

Three entry points, one per way of building an agent:

- :func:`memory_middleware`: agent middleware for LangChain 1.x
  ``create_agent(model, tools, middleware=[...], store=store)``.
- :func:`memory_prompt`: the ``prompt=`` callable of LangGraph's prebuilt
  ``create_react_agent(model, tools, prompt=..., store=store)``.
- :func:`memory_node`: a node that calls the model, for a hand-built graph.

:func:`remember_tool` lets the agent write memories back, validated by the
store's one write rule (:func:`poolsplit_memory.check_entry`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, OrderedDict
from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from datetime import datetime, timedelta, timezone
from typing import Any, Final, NamedTuple, Optional, Protocol, Union, cast
from weakref import WeakKeyDictionary

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain.agents.middleware.types import ModelResponse
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        trim_messages,
    )
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.config import get_config, get_store
    from langgraph.store.base import BaseStore, GetOp, Item
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"poolsplit_memory.langgraph needs LangChain and LangGraph ({exc.name} is "
        "missing): pip install 'poolsplit-memory[langgraph]' (Python 3.11+)"
    ) from exc

from poolsplit import (
    Pool,
    TokenCounter,
    default_token_counter,
)

from poolsplit_memory import (
    DEFAULT_MAX_ENTRY_TOKENS,
    REMEMBER_DESCRIPTION,
    InvalidInput,
    build_entry,
    check_entry,
    default_pools,
    loadable,
    not_loaded,
)
from poolsplit_memory._entries import Prepared, prepare
from poolsplit_memory._frame import frame, split_always
from poolsplit_memory._pooled import Part, Parts, lexical, owners
from poolsplit_memory._ranking import Relevance
from poolsplit_memory._trust import PROVENANCE
from poolsplit_memory.store import pool_owners

__all__ = [
    "METADATA_KEY",
    "RANKINGS",
    "Namespace",
    "load_entries",
    "memory_middleware",
    "memory_node",
    "memory_prompt",
    "remember",
    "remember_tool",
    "user_label",
    "user_namespace",
    "with_memory",
]

METADATA_KEY: Final = "poolsplit"
"""The ``additional_kwargs`` key of the system message: injected ids and the
history report; the model reads only the text."""

# The limit of the first BaseStore.search call that reads a namespace; a read
# that comes back full is repeated with twice the limit (see load_entries).
FIRST_LIMIT: Final = 500

Namespace = Union[tuple[str, ...], Callable[[RunnableConfig], tuple[str, ...]]]
"""A namespace, or a function of the run's config that returns one."""


class MemoryNode(Protocol):
    """A LangGraph node that is given the run's config and the graph's store."""

    def __call__(
        self,
        state: Mapping[str, Any],
        *,
        config: RunnableConfig,
        store: Optional[BaseStore],  # noqa: UP045 - LangGraph reads this annotation
    ) -> dict[str, list[AnyMessage]]: ...


# ===========================================================================
# The model's input: one system message, the latest question whole
# ===========================================================================


def with_memory(
    messages: Sequence[BaseMessage],
    entries: Iterable[Any],
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
) -> list[BaseMessage]:
    """The model's input: one merged system message, the history, the recall.

    The pools (None: the store's defaults for ``entries``) are filled for
    the latest ``HumanMessage`` (or "" when there is none). ``entries`` are
    read by the store's one rule (:func:`poolsplit_memory.store.loadable`):
    one that fails it is left out and listed in
    ``additional_kwargs["poolsplit"]["skipped"]``, an always-scope one also
    named in the text, never fatal to the turn. That message and
    everything after it (the current turn: tool calls and their results) are
    always sent, whole, even when they alone pass ``max_history_tokens``: a
    model must never answer a question it was not shown. The earlier history
    gets what is left of ``max_history_tokens`` (approximate count), trimmed
    by ``trim_messages`` to its most recent messages, starting on a human
    message; when nothing is left it is dropped.
    ``additional_kwargs["poolsplit"]["history"]`` reports ``sent`` and
    ``dropped`` message counts, the current turn's ``current_tokens`` and the
    budget. System messages already in ``messages`` are merged after
    ``prompt`` instead of being sent again. The system message ends with
    the always-scope entries; the other recalled entries are one
    ``HumanMessage`` between the earlier history and the current turn
    (none when there is none), so the latest question stays last.

    ``ranking`` ranks within a pool as ``open_store(ranking=...)`` does
    (:data:`RANKINGS`).

    Raises:
        TypeError: ``max_history_tokens`` is not an int.
        ValueError: ``max_history_tokens`` is negative, or ``ranking`` is
            not one of :data:`RANKINGS`.
        The errors of ``poolsplit.retrieve_pools`` for bad pools.
    """
    return _with_memory(
        messages,
        prepare(list(entries), pools),
        prompt=prompt,
        max_history_tokens=max_history_tokens,
        headers=headers,
        now=now,
        ranking=_check_ranking(ranking),
    )


def _latest_human(history: Sequence[BaseMessage]) -> int | None:
    """The position of the last ``HumanMessage``, or None."""
    for position in range(len(history) - 1, -1, -1):
        if isinstance(history[position], HumanMessage):
            return position
    return None


RANKINGS: Final = ("lexical", "core")
"""How the adapters rank within a pool, as ``open_store(ranking=...)``:
"lexical" (the default) weighs the message by BM25+ over the namespace's
entries, "core" is ``poolsplit.default_scorer``. ("semantic" needs the
vectors a ``poolsplit_memory`` store keeps.)"""


def _check_ranking(ranking: object) -> str:
    if ranking not in RANKINGS:
        raise ValueError(
            f"ranking must be one of {RANKINGS}, got {ranking!r} (semantic "
            "recall needs a poolsplit_memory store: open_store(..., "
            'ranking="semantic"))'
        )
    return str(ranking)


class _Report(NamedTuple):
    """What a turn says of the entries read, as :class:`Prepared` says it,
    without the entries (a namespace kept loaded has them in its index)."""

    pools: list[Pool]
    skipped: list[dict[str, str]]
    notice: str
    warnings: list[str]


def _filled(
    source: Prepared | _Loaded, message: str, ranking: str, now: datetime | None
) -> tuple[dict[str, list[Any]], Prepared | _Report]:
    """The pools for ``message``, ranked as a store with this ``ranking``
    ranks them (the lexical statistics are those of the entries read), and
    what was read. A namespace kept loaded fills them by its recall
    index, under its lock; a list read for this call, by the core."""
    if isinstance(source, _Loaded):
        at = datetime.now(timezone.utc) if now is None else now
        # the message's times read before the lock (a message full of them
        # costs milliseconds; the other turns of the namespace need not wait)
        relevance = None if ranking == "core" else lexical(message, at)
        with source.lock:
            return source.fill(message, relevance, at)
    read = source
    context = {"message": message}
    at = datetime.now(timezone.utc) if now is None else now
    # the core ranking too goes through the parts: a quarantined item loads
    # in the quarantine pool only, whatever the ranking
    parts = Parts(owners(read.pools), ranking)
    parts.enter(enumerate(read.entries))
    results = parts.recall(
        read.pools,
        context,
        now=at,
        token_counter=default_token_counter,
        relevance=None if ranking == "core" else lexical(message, at),
    )
    return results, read


def _with_memory(
    messages: Sequence[BaseMessage],
    source: Prepared | _Loaded,
    *,
    prompt: str,
    max_history_tokens: int,
    headers: Mapping[str, str] | None,
    now: datetime | None,
    ranking: str,
) -> list[BaseMessage]:
    if isinstance(max_history_tokens, bool) or not isinstance(max_history_tokens, int):
        raise TypeError(
            "max_history_tokens must be an int, "
            f"got {type(max_history_tokens).__name__}"
        )
    if max_history_tokens < 0:
        raise ValueError(f"max_history_tokens must be >= 0, got {max_history_tokens}")
    history = [m for m in messages if not isinstance(m, SystemMessage)]
    own = [m.text for m in messages if isinstance(m, SystemMessage)]
    start = _latest_human(history)
    current = [] if start is None else history[start:]
    earlier = history if start is None else history[:start]
    message = "" if start is None else history[start].text
    results, read = _filled(source, message, ranking, now)
    current_tokens = count_tokens_approximately(current)
    room = max_history_tokens - current_tokens
    kept: list[BaseMessage] = []
    if room > 0 and earlier:
        kept = trim_messages(
            earlier,
            max_tokens=room,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
        )
    report = {
        "sent": len(kept) + len(current),
        "dropped": len(earlier) - len(kept),
        "current_tokens": current_tokens,
        "max_history_tokens": max_history_tokens,
    }
    system, recalled = _memory_messages(
        _joined(prompt, *own), results, headers, read, history=report
    )
    return [system, *kept, *recalled, *current]


def _joined(*parts: str) -> str:
    return "\n\n".join(part.rstrip("\n") for part in parts if part)


def _memory_messages(
    prompt: str,
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    headers: Mapping[str, str] | None,
    read: Prepared | _Report,
    **report: Any,
) -> tuple[SystemMessage, list[HumanMessage]]:
    """The ONE ``SystemMessage`` (the agent's prompt, then the always-scope
    entries in the frame) and the rest of the recall, framed, as a
    ``HumanMessage`` to send just before the current turn (none when no
    context entry was recalled).

    LangChain puts standing instructions in the system prompt and context
    read from the store into the messages, as a user message a
    ``wrap_model_call`` middleware adds for the call only (docs: "Context
    engineering in agents", Messages, the Store tab); its RAG tutorial
    likewise puts retrieved context in the user's turn, as data. An
    always-scope entry that could not be loaded is named in the system
    text, so the model (and whoever reads the transcript) knows a
    correction is missing; every skipped entry is in the metadata.
    """
    always, context = split_always(results)
    standing = frame(always, headers=headers)
    text = _joined(prompt, standing + read.notice)
    pools = {name: [e.get("id") for e in chosen] for name, chosen in results.items()}
    meta = {
        "pools": pools,
        "skipped": read.skipped,
        "warnings": read.warnings,
        **report,
    }
    system = SystemMessage(content=text, additional_kwargs={METADATA_KEY: meta})
    recalled = frame(context, headers=headers)
    if not recalled:
        return system, []
    ids = {name: [e.get("id") for e in chosen] for name, chosen in context.items()}
    marked = {METADATA_KEY: {"pools": ids}}
    return system, [HumanMessage(content=recalled, additional_kwargs=marked)]


# ===========================================================================
# Entries in a LangGraph BaseStore
# ===========================================================================


def user_namespace(config: RunnableConfig) -> tuple[str, ...]:
    """``("memories", user_label(user_id))`` of ``config["configurable"]``.

    Raises:
        TypeError, ValueError: as :func:`user_label`.
    """
    user: Any = (config.get("configurable") or {}).get("user_id")
    return ("memories", user_label(user))


# What LangGraph refuses in a namespace label (langgraph.store.base
# _validate_namespace_labels: ".", NUL), and "%", the escape itself.
_ESCAPED: Final = {ord(c): f"%{ord(c):02X}" for c in "%.\x00"}


def user_label(user_id: str) -> str:
    """The namespace label of a user id: the id, with ``%``, ``.`` and NUL
    percent-escaped.

    >>> user_label("ada"), user_label("ada@example.com"), user_label("a%b")
    ('ada', 'ada@example%2Ecom', 'a%25b')

    LangGraph refuses a namespace label that is empty or holds ``.`` or NUL
    (``InvalidNamespaceError``), so an e-mail address cannot be a label as
    it is. Escaping exactly those two and ``%`` itself (``%25``, ``%2E``,
    ``%00``) keeps every other character (``@``, ``/``, spaces, any script)
    and gives every id its own label: ``a.b`` and ``a_b`` stay two users,
    and ``urllib.parse.unquote(label)`` is the id again. An id without
    ``%``, ``.`` or NUL is its own label, as before this rule. O(len(id)).

    Raises:
        TypeError: ``user_id`` is neither a str nor None.
        ValueError: ``user_id`` is None (missing) or empty: it names nobody,
            and one namespace for every such user would mix their memories.
    """
    if user_id is not None and not isinstance(user_id, str):
        raise TypeError(
            f"user_id must be a str (config['configurable']['user_id']), "
            f"got {type(user_id).__name__}"
        )
    if not user_id:
        raise ValueError(
            f"user_id must be a non-empty str, got {user_id!r}: it names the "
            "user's memory namespace (config['configurable']['user_id'])"
        )
    return user_id.translate(_ESCAPED)


def _namespace(namespace: Namespace, config: RunnableConfig) -> tuple[str, ...]:
    space = namespace(config) if callable(namespace) else namespace
    _check_namespace(space)
    return space


def _check_namespace(namespace: object) -> None:
    if not isinstance(namespace, tuple) or not namespace:
        raise TypeError(
            f"namespace must be a non-empty tuple of str, got {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise ValueError(
                f"namespace labels must be non-empty str, got {label!r} "
                f"in {namespace!r}"
            )


def load_entries(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """Every item value in exactly ``namespace``, read by one ``search`` call.

    ``BaseStore.search`` promises items whose namespace starts with the
    prefix, at most ``limit`` of them, in an order each store chooses; its
    ``offset`` promises nothing across calls. LangGraph's ``PostgresStore``
    orders by ``updated_at`` alone, so items written in one transaction
    come back in any order and offset pages skip some and repeat others
    (6,000 items of one batch were read as 5,996); ``MongoDBStore`` refuses
    any ``offset``. So no ``offset`` is used: the namespace is read by one
    call whose limit is above its size. A read that comes back full
    (``limit`` items) is repeated from the start with twice the limit,
    until one comes back short: that read holds every item, whatever its
    order, as one search saw them (on PostgreSQL, one query's snapshot).
    The only rule relied on is ``limit``'s: a store returns fewer only when
    no more items match.

    ``search`` matches a *prefix*: an item under ``("memories", "ada",
    "archive")`` comes back for ``("memories", "ada")``. Only items whose
    namespace equals ``namespace`` are kept, because with user ids as
    namespaces a longer one is another user's data.

    Cost: one search when the prefix holds fewer than ``FIRST_LIMIT``
    items, or fewer than twice what it held at the last read of the same
    store object; otherwise about log2(n / first limit) + 2 searches that
    read fewer than 4n items in all.

    Raises:
        TypeError, ValueError: ``namespace`` is not a non-empty tuple of
            non-empty str.
    """
    return [item.value for item in _load_items(store, namespace)]


# One reading rule for search and asearch: the generators below decide,
# without I/O, what to ask for next (a search, a get of some keys, or one
# question to a PostgresStore's table); _run and _arun only carry out their
# requests.
class _Search(NamedTuple):
    """One ``search`` of the prefix: answered with its items."""

    limit: int
    offset: int


class _Get(NamedTuple):
    """One ``batch`` of a ``GetOp`` per key: answered with an item or None
    per key."""

    keys: tuple[str, ...]


class _Changes(NamedTuple):
    """One query of a LangGraph PostgresStore's own table (see
    :func:`_table_query`): answered with a :class:`_Seen`, or None when the
    table cannot be asked."""

    since: datetime


class _Seen(NamedTuple):
    """What the table said of the namespace, in one snapshot."""

    at: datetime  # no unseen write is stamped earlier (see _OPEN_SQL)
    rows: int  # the namespace's rows (those a search returns)
    stamps: dict[str, datetime]  # key -> updated_at, of rows stamped >= since


_Request = Union[_Search, _Get, _Changes]
_Answer = Union[Sequence[Optional[Item]], _Seen, None]
_Reads = Generator[_Request, _Answer, list[Item]]


def _search(limit: int, offset: int) -> Generator[_Request, _Answer, list[Item]]:
    """One search's items (``yield from`` it in a reading generator)."""
    found = yield _Search(limit, offset)
    return cast("list[Item]", list(found or ()))


# The number of items each prefix of each store held at its last read: the
# next read asks for twice that at once, so a namespace that has not doubled
# since is read by one search (measured on PostgresStore at 6,000 items: the
# doubling reads took about 2x one complete search). Only a hint: any first
# limit gives the same items. Weak keys: a store no longer used is forgotten.
_sizes: WeakKeyDictionary[BaseStore, dict[tuple[str, ...], int]] = WeakKeyDictionary()


def _whole(store: BaseStore, namespace: tuple[str, ...]) -> _Reads:
    """Yields each read's request, is sent that read's items, returns every
    item under the prefix once a read comes back short (see load_entries)."""
    _check_namespace(namespace)
    try:
        sizes = _sizes.setdefault(store, {})
    except TypeError:  # a store without a hash or weak references: no hint
        sizes = {}
    limit = max(FIRST_LIMIT, 2 * sizes.get(namespace, 0))
    while True:
        found = yield from _search(limit, 0)
        if len(found) < limit:
            sizes[namespace] = len(found)
            return found
        limit *= 2


def _run(store: BaseStore, namespace: tuple[str, ...], reads: _Reads) -> list[Item]:
    """``reads`` carried out through ``search``, ``batch`` and the store's
    table (a sync turn cannot ask an ``AsyncPostgresStore``'s table: it
    answers None, and the turn probes by searches)."""
    request = next(reads)
    while True:
        answer: _Answer
        if isinstance(request, _Search):
            limit, offset = request
            answer = store.search(namespace, limit=limit, offset=offset)
        elif isinstance(request, _Get):
            ops = [GetOp(namespace, key) for key in request.keys]
            answer = cast("list[Item | None]", store.batch(ops))
        elif _is_async(store):
            answer = None
        else:
            answer = _ask_table(store, namespace, request.since)
        try:
            request = reads.send(answer)
        except StopIteration as done:
            items: list[Item] = done.value
            return items


async def _arun(
    store: BaseStore, namespace: tuple[str, ...], reads: _Reads
) -> list[Item]:
    """``reads`` carried out through ``asearch``, ``abatch`` and the
    store's table (an async store's path)."""
    request = next(reads)
    while True:
        answer: _Answer
        if isinstance(request, _Search):
            limit, offset = request
            answer = await store.asearch(namespace, limit=limit, offset=offset)
        elif isinstance(request, _Get):
            ops = [GetOp(namespace, key) for key in request.keys]
            answer = cast("list[Item | None]", await store.abatch(ops))
        else:
            answer = await _aask_table(store, namespace, request.since)
        try:
            request = reads.send(answer)
        except StopIteration as done:
            items: list[Item] = done.value
            return items


def _load_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """The items of exactly ``namespace``, read whole through ``search``."""
    return _exact(_run(store, namespace, _whole(store, namespace)), namespace)


async def _aload_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """The items of exactly ``namespace``, read whole through ``asearch``."""
    found = await _arun(store, namespace, _whole(store, namespace))
    return _exact(found, namespace)


def _exact(found: Sequence[Item], namespace: tuple[str, ...]) -> list[Item]:
    """The items of exactly ``namespace``, once per key."""
    kept: dict[str, Item] = {}
    for item in found:
        if item.namespace == namespace:
            kept.setdefault(item.key, item)
    return list(kept.values())


# ===========================================================================
# A namespace kept loaded between turns
# ===========================================================================

# A write to PostgreSQL is stamped with its transaction's start
# (CURRENT_TIMESTAMP), so it can commit after a read that saw a later stamp:
# every turn rereads the items stamped within this window before the last
# read. PostgresStore autocommits each batch: a put alone commits within
# milliseconds, but a batch that reads before it writes (AsyncPostgresStore
# merges concurrent calls into one batch) stamps its puts when that read
# began and commits them after their embeddings (an index config): measured,
# a put committed 2 s after its stamp behind a GetOp and a 2 s pause in its
# batch. A query of the table therefore also reads, just before it, when the
# oldest transaction then open in the database began (pg_stat_activity), and
# rereads from there when that is earlier: a transaction held open for
# minutes is seen when it commits. The window remains for what that view
# hides: the transactions of another database role, whose start only a
# superuser or a member of pg_read_all_stats can read.
RECENT_WINDOW: Final = timedelta(seconds=10)
# When the last read happened is known by this process's clock, the stamps
# by the database's: the two may differ by this much (NTP keeps them within
# milliseconds), so the window starts this much earlier.
CLOCK_SKEW: Final = timedelta(seconds=60)
# The first read of the recent items; a read that comes back full of recent
# items is repeated with RECENT_GROWTH times the limit.
_RECENT_FIRST: Final = 16
_RECENT_GROWTH: Final = 4
# Namespaces (with their pools and ranking) kept loaded per store, the least
# recently used forgotten first: each holds its entries, their statistics
# and the recall index (tens of MB at 10,000 entries).
MAX_LOADED: Final = 16

_Key = tuple[str, ...]
_Pair = tuple[_Key, str]  # (namespace, key) of an item under the prefix


class _Loaded:
    """One namespace of one store as the turns read it: its entries loaded
    by the store's rule (:func:`poolsplit_memory.loadable`), the lexical
    ranking's statistics and the recall index ``Store.recall`` uses, all
    brought forward item by item (:meth:`sync`), never rebuilt.

    An item's value is compared with the copy loaded (``==``), so an item
    rewritten with the same key, by this process or another, is loaded
    again; an item gone from a whole read leaves. The always-scope state
    (warnings, always-scope items not loaded) depends on every always-scope
    item together, so it is recomputed from them, few, when one changes.
    ``lock`` guards every change and every recall.
    """

    def __init__(
        self,
        pools: tuple[Pool, ...] | None,
        ranking: str,
        *,
        newest_first: bool = False,
    ) -> None:
        self.pools = pools
        self.newest_first = newest_first  # the store reads newest first
        self.lock = threading.Lock()
        self.generation = 0  # syncs applied: a read older than one is dropped
        self.complete = False  # a whole read was applied
        self.newest: datetime | None = None  # the newest updated_at seen
        self.read_at: datetime | None = None  # when the last read applied began
        # At the last query of its table (PostgresStore): the database's now(),
        # or the start of the oldest transaction then open if earlier.
        self.checked_at: datetime | None = None
        self.stamps: dict[str, datetime] = {}  # key -> updated_at, per item read
        self.prefix: dict[_Pair, None] = {}  # every item under the prefix
        # The loaded items split by the pool that owns their type, each
        # part with its statistics and recall index (every pool its room).
        self.parts = Parts(pool_owners(pools), ranking)
        self._values: dict[str, tuple[int, Any]] = {}  # key -> (seq, copy)
        self._in_place = _InPlace([])  # InMemoryStore's items, as read
        self._seq = 0  # the last seq given, in order of arrival
        self._first = 0  # the first seq given, newest first (newest_first)
        self._types: Counter[str] = Counter()
        self._skipped: dict[int, dict[str, str]] = {}
        self._always: dict[int, tuple[str, Any]] = {}  # seq -> (key, value)
        self._warnings: list[str] = []
        self._always_skipped: str = ""

    def sync(
        self,
        found: Sequence[Item],
        namespace: _Key,
        *,
        whole: bool,
        read_at: datetime | None = None,
        checked_at: datetime | None = None,
    ) -> None:
        """Apply a read that began at ``read_at`` (this clock; ``checked_at``
        by the database's, when the read began by a query of its table):
        ``found`` is every item under the prefix (``whole``) or some of
        them, the recent ones (an upsert)."""
        self.read_at = read_at
        self.checked_at = checked_at
        exact = _exact(found, namespace)
        values, held = self._values, self.stamps
        # On a store that reads newest first, a new stamp moves an item.
        moved = self.newest_first
        changed = [
            item
            for item in exact
            if item.key not in values
            or values[item.key][1] != item.value
            or (moved and held.get(item.key) != item.updated_at)
        ]
        stamps = {item.key: item.updated_at for item in exact}
        if whole:
            self.prefix = dict.fromkeys((i.namespace, i.key) for i in found)
            gone = [key for key in values if key not in stamps]
            self.stamps = stamps
        else:
            self.prefix.update(dict.fromkeys((i.namespace, i.key) for i in found))
            gone = []
            held.update(stamps)
        seen = [i.updated_at for i in found if isinstance(i.updated_at, datetime)]
        if seen:
            newest = max(seen)
            if whole or self.newest is None or newest > self.newest:
                self.newest = newest
        elif whole:
            self.newest = None
        self.complete = self.complete or whole
        self.generation += 1
        self._replace(gone, changed, [item.key for item in exact] if whole else None)

    def since(self) -> datetime | None:
        """The earliest ``updated_at``, by the database's clock, that a
        write the last read did not see can carry; None before any read.

        A write is stamped when its transaction began (``CURRENT_TIMESTAMP``)
        and may commit up to :data:`RECENT_WINDOW` later, so one unseen by a
        read that began at T is stamped after T less the window. After a
        query of its table T is the database's ``now()``, or the start of
        the oldest transaction then open if earlier (:data:`_OPEN_SQL`), so
        a transaction held open longer than the window is seen too; else
        the newest stamp seen or this clock's time less :data:`CLOCK_SKEW`,
        whichever is later."""
        if self.checked_at is not None:
            return self.checked_at - RECENT_WINDOW
        began = None if self.read_at is None else self.read_at - CLOCK_SKEW
        known = [t for t in (self.newest, began) if t is not None]
        return max(known) - RECENT_WINDOW if known else None

    def sync_in_place(self, current: dict[str, Item]) -> None:
        """Apply an ``InMemoryStore``'s items of the namespace, its own dict
        (:func:`_in_place_changes` finds what changed)."""
        read, found = _in_place_changes(self._in_place, current)
        if found is None:
            return
        changed, gone, order = found
        self._in_place = read
        self.complete = True
        self.generation += 1
        self._replace(gone, changed, order)

    def _replace(
        self,
        gone: Sequence[str],
        changed: Sequence[Item],
        order: Iterable[str] | None,
    ) -> None:
        """Drop the ``gone`` keys, and put each ``changed`` item in its key's
        place: a rewritten item keeps the place its key had, as a fresh read
        of a store that updates in place (``InMemoryStore``: a dict) gives
        it, so that ties (broken last by position) order as such a read. On
        a store that reads the newest ``updated_at`` first (``newest_first``:
        PostgresStore), each changed item goes first instead, the newest
        one before the others.
        ``order`` (the keys as the store read them, when it read them all)
        tells a key that moved (deleted and put again: a dict's new last)
        from one rewritten in place: one that comes after a key it used to
        precede goes last, as a new key does."""
        values = self._values
        if self.newest_first:  # the newest first, each before every older one
            # (as read among equal stamps: reversed, sorted stably, then each
            # given a seq below the last)
            changed = sorted(reversed(changed), key=_stamp)
            order = None
        places = {
            item.key: values[item.key][0]
            for item in changed
            if item.key in values and not self.newest_first
        }
        if order is not None and places:
            last = 0
            for key in order:
                seq = values[key][0] if key in values else None
                if seq is None:
                    continue
                if seq > last:
                    last = seq
                else:  # behind a key it preceded: put again, not in place
                    places.pop(key, None)
        always_changed = False
        for key in [*gone, *(item.key for item in changed)]:
            always_changed |= self._leave(key)
        always_changed |= self._enter(changed, places)
        if always_changed:
            self._load_always()

    def _leave(self, key: str) -> bool:
        """The one place an item leaves; whether it was always-scope."""
        entry = self._values.pop(key, None)
        if entry is None:
            return False
        seq = entry[0]
        if self.parts.has(seq):
            loaded = self.parts.leave(seq)
            kind = loaded.get("type", "note")
            self._types[kind] -= 1
            if not self._types[kind]:
                del self._types[kind]
        self._skipped.pop(seq, None)
        return self._always.pop(seq, None) is not None

    def _enter(self, items: Sequence[Item], places: Mapping[str, int]) -> bool:
        """The one place items enter (a key in ``places`` at that seq, a new
        one after every other); whether one is always-scope."""
        # A copy of each value: the store's own dict may change in place.
        values = [
            dict(item.value) if isinstance(item.value, Mapping) else item.value
            for item in items
        ]
        seqs = []
        for item, value in zip(items, values):
            seq = places.get(item.key)
            if seq is None and self.newest_first:
                self._first -= 1
                seq = self._first
            elif seq is None:
                self._seq += 1
                seq = self._seq
            seqs.append(seq)
            self._values[item.key] = (seq, value)
        keys = [item.key for item in items]
        found = loadable(values, pools=self.pools, ids=keys)
        by_object = {id(value): seq for value, seq in zip(values, seqs)}
        entered = [(by_object[id(entry)], entry) for entry in found.entries]
        for _, entry in entered:
            self._types[entry.get("type", "note")] += 1
        self.parts.enter(entered)
        by_key = dict(zip(keys, seqs))
        for skipped in found.skipped:
            self._skipped[by_key[skipped.id]] = {
                "id": skipped.id,
                "reason": skipped.reason,
            }
        always = False
        for key, seq, value in zip(keys, seqs, values):
            if isinstance(value, Mapping) and value.get("scope") == "always":
                self._always[seq] = (key, value)
                always = True
        return always

    def _load_always(self) -> None:
        """The warnings and the always-scope items not loaded: ``loadable``
        over every always-scope item (what it says of them does not depend
        on the other items)."""
        kept = [self._always[seq] for seq in sorted(self._always)]
        found = loadable(
            [value for _, value in kept], pools=self.pools, ids=[k for k, _ in kept]
        )
        self._warnings = list(found.warnings)
        self._always_skipped = not_loaded(found.always_skipped)

    def report(self) -> _Report:
        """What :func:`prepare` gives for the items as loaded (seq order),
        but the entries: the index holds them, and listing them in order
        after a write would cost a sort of every key (about 1 ms at
        10,000)."""
        pools = list(self.pools) if self.pools is not None else None
        return _Report(
            default_pools(self._types) if pools is None else pools,
            [self._skipped[seq] for seq in sorted(self._skipped)],
            self._always_skipped,
            list(self._warnings),
        )

    def fill(
        self,
        message: str,
        relevance: Callable[[Part], Relevance] | None,
        now: datetime,
    ) -> tuple[dict[str, list[Any]], _Report]:
        """The pools for ``message`` as :func:`_filled` fills them from
        the entries loaded, by each pool's recall index (the same results,
        reading a few entries per pool), with ``relevance`` per pool (None:
        the core's scorer)."""
        read = self.report()
        results = self.parts.recall(
            read.pools,
            {"message": message},
            now=now,
            token_counter=default_token_counter,
            relevance=relevance,
        )
        return results, read


def _stamp(item: Item) -> tuple[bool, datetime]:
    """An item's ``updated_at`` as a sort key (a missing one first)."""
    stamp = item.updated_at
    ok = isinstance(stamp, datetime)
    return ok, stamp if ok else datetime.min.replace(tzinfo=timezone.utc)


# Per store, the namespaces kept loaded (weak keys: a store no longer used is
# forgotten with them).
_loaded: WeakKeyDictionary[BaseStore, OrderedDict[Any, _Loaded]] = WeakKeyDictionary()
_loaded_lock = threading.Lock()


def _loaded_for(
    store: BaseStore,
    namespace: _Key,
    pools: Sequence[Pool] | None,
    ranking: str,
) -> _Loaded:
    """The namespace kept loaded for these pools and ranking (a new one for
    a store that cannot be a weak key or pools that cannot be hashed)."""
    chosen = None if pools is None else tuple(pools)
    key = (namespace, chosen, ranking)
    with _loaded_lock:
        try:
            kept = _loaded.setdefault(store, OrderedDict())
            found = kept.get(key)
        except TypeError:
            return _Loaded(chosen, ranking, newest_first=_orders_by_update(store))
        if found is None:
            first = _orders_by_update(store)
            found = kept[key] = _Loaded(chosen, ranking, newest_first=first)
            while len(kept) > MAX_LOADED:
                kept.popitem(last=False)
        kept.move_to_end(key)
        return found


def _orders_by_update(store: BaseStore) -> bool:
    """Whether ``search`` without a query gives the newest ``updated_at``
    first and every write stamps ``updated_at``: LangGraph's
    ``PostgresStore`` and ``AsyncPostgresStore`` (``ORDER BY updated_at
    DESC``, ``updated_at = CURRENT_TIMESTAMP``), not a subclass of them."""
    kind = type(store)
    return (kind.__module__, kind.__name__) in {
        ("langgraph.store.postgres.base", "PostgresStore"),
        ("langgraph.store.postgres.aio", "AsyncPostgresStore"),
    }


def _is_async(store: BaseStore) -> bool:
    """Whether ``store`` is LangGraph's ``AsyncPostgresStore`` (its table is
    asked through an async cursor only)."""
    kind = type(store)
    return (kind.__module__, kind.__name__) == (
        "langgraph.store.postgres.aio",
        "AsyncPostgresStore",
    )


# The stores whose table could not be asked, and why (the first error): they
# are probed by searches from then on. Weak keys, as _loaded.
_unasked: WeakKeyDictionary[BaseStore, str] = WeakKeyDictionary()

# Asked just before _TABLE_SQL, in the same cursor: the earliest stamp a write
# that query will not see can carry. Such a write commits after the query's
# snapshot, so at this statement it was either open (its stamp, the start of
# its transaction, is at least the oldest xact_start listed) or not yet begun
# (stamped after this now()). least() ignores the NULL of an empty list.
_OPEN_SQL: Final = """
SELECT least(now(), min(xact_start)) AS at
FROM pg_stat_activity
WHERE datname = current_database()
"""
# The one question a turn asks a PostgresStore's table: the namespace's rows
# (as its search counts them) and the key and stamp of each stamped since the
# last read (one array of (key, updated_at) records: one filter per row). No
# index serves updated_at, so it reads the namespace's rows once, without
# sorting them: 1.2-1.6 ms at 10,000 rows on this machine (a bare count
# 1.0-1.2 ms), against about 9 ms for the two probing searches, which sort
# them by updated_at.
_TABLE_SQL: Final = """
SELECT count(*) AS count,
       array_agg((key, updated_at)) FILTER (WHERE updated_at >= %(since)s) AS recent
FROM store
WHERE prefix = %(prefix)s{expiry}
"""
# What the store's search adds when its TTL config omits expired items.
_UNEXPIRED_SQL: Final = " AND (expires_at IS NULL OR expires_at > now())"


def _table_query(
    store: BaseStore, namespace: _Key, since: datetime
) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of :data:`_TABLE_SQL` for ``namespace``: its
    text is the labels joined by ``.``, as the store keeps it (LangGraph
    refuses a ``.`` in a label, so the text is the namespace's alone)."""
    ttl = getattr(store, "ttl_config", None)
    omit = isinstance(ttl, Mapping) and bool(ttl.get("omit_expired"))
    sql = _TABLE_SQL.format(expiry=_UNEXPIRED_SQL if omit else "")
    return sql, {"prefix": ".".join(namespace), "since": since}


class _Unexpected(Exception):
    """The table answered in a shape this module does not know."""


def _seen(opened: object, row: object) -> _Seen:
    """The answers of :data:`_OPEN_SQL` and the table, checked."""
    if not isinstance(opened, Mapping) or not isinstance(row, Mapping):
        raise _Unexpected(f"rows of {type(opened).__name__}, {type(row).__name__}")
    at, count, recent = opened.get("at"), row.get("count"), row.get("recent") or []
    if not isinstance(at, datetime) or not isinstance(count, int):
        raise _Unexpected(f"at={at!r}, count={count!r}")
    if not all(
        isinstance(pair, tuple)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and isinstance(pair[1], datetime)
        for pair in recent
    ):
        raise _Unexpected(f"recent={recent!r}")
    return _Seen(at, count, dict(recent))


def _table_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean the table cannot be asked this way (another
    schema, no rights, another LangGraph layout); any other error (the
    connection lost) is raised, as the store's own search would raise it."""
    import psycopg

    return (psycopg.ProgrammingError, AttributeError, _Unexpected)


def _unaskable(store: BaseStore, error: BaseException) -> None:
    """Remember that ``store``'s table cannot be asked."""
    with contextlib.suppress(TypeError):  # no weak reference: asked again
        _unasked.setdefault(store, f"{type(error).__name__}: {error}")


def _ask_table(store: BaseStore, namespace: _Key, since: datetime) -> _Seen | None:
    """:data:`_TABLE_SQL` through the store's own cursor (its connection or
    pool, its lock and pipeline, as its ``batch`` uses them); None, and the
    store remembered, when the table cannot be asked."""
    sql, params = _table_query(store, namespace, since)
    try:
        with store._cursor(pipeline=True) as cursor:  # type: ignore[attr-defined]
            cursor.execute(_OPEN_SQL)
            opened = cursor.fetchone()
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return _seen(opened, row)
    except _table_errors() as error:
        _unaskable(store, error)
        return None


async def _aask_table(
    store: BaseStore, namespace: _Key, since: datetime
) -> _Seen | None:
    """:func:`_ask_table` through an ``AsyncPostgresStore``'s cursor."""
    sql, params = _table_query(store, namespace, since)
    try:
        async with store._cursor(pipeline=True) as cursor:  # type: ignore[attr-defined]
            await cursor.execute(_OPEN_SQL)
            opened = await cursor.fetchone()
            await cursor.execute(sql, params)
            row = await cursor.fetchone()
        return _seen(opened, row)
    except _table_errors() as error:
        _unaskable(store, error)
        return None


def _recent(loaded: _Loaded, store: BaseStore, namespace: _Key) -> _Reads:
    """The items written since ``loaded``'s reads, or every item under the
    prefix (a :class:`_Whole`) when that cannot be told.

    On LangGraph's PostgresStore: :func:`_checked`, one query of its table;
    when the table cannot be asked (or a sync turn has an async store),
    :func:`_probed`, two searches. Elsewhere, and when either cannot tell:
    the namespace read whole. A probe counts the whole prefix, longer
    namespaces too, which a query of the table (exactly the namespace)
    does not follow: after one (``checked_at`` set), the first probe is a
    whole read.
    """
    since = loaded.since()
    if loaded.complete and since is not None and _orders_by_update(store):
        changed: list[Item] | None = None
        seen = None if store in _unasked else (yield _Changes(since))
        if isinstance(seen, _Seen):
            changed = yield from _checked(loaded, namespace, seen)
        elif loaded.newest is not None and loaded.checked_at is None:
            changed = yield from _probed(loaded, since)
        if changed is not None:
            return changed
    found = yield from _whole(store, namespace)
    return _Whole(found)


class _Checked(list):  # type: ignore[type-arg]
    """The items a query of the table found changed, and when (by the
    database's clock) that query began."""

    def __init__(self, items: Iterable[Item], at: datetime) -> None:
        super().__init__(items)
        self.at = at


def _checked(
    loaded: _Loaded, namespace: _Key, seen: _Seen
) -> Generator[_Request, _Answer, _Checked | None]:
    """The items the table says changed since the last read (a key stamped
    since then whose stamp is not the one loaded), read by one ``GetOp``
    each; None when the namespace does not hold exactly the keys loaded and
    those new ones (a delete or an expiry: read it whole).

    Every write through the store's API stamps ``updated_at`` when its
    transaction began, so a put, a rewrite with the same key (a new stamp)
    or a delete (one row less, which no number of puts of new keys can
    hide, since every new key is named) since the last read is seen, also
    when its transaction was open for longer than :data:`RECENT_WINDOW`;
    a write by another database role committed more than the window after
    its stamp (``pg_stat_activity`` hides that role's transactions), or by
    a two-phase transaction (prepared, it leaves that view), or a row
    changed by SQL without ``updated_at``, is not. The count is checked
    against the keys the query named, in its snapshot: a new key deleted
    before its get must not hide a delete the count saw."""
    held = loaded.stamps  # one key per item loaded
    changed = tuple(k for k, t in seen.stamps.items() if held.get(k) != t)
    new = sum(1 for key in changed if key not in held)
    if seen.rows != len(held) + new:
        return None
    found: list[Item] = []
    if changed:
        got = yield _Get(changed)
        found = [item for item in got or () if isinstance(item, Item)]
    return _Checked(found, seen.at)


def _probed(
    loaded: _Loaded, since: datetime
) -> Generator[_Request, _Answer, list[Item] | None]:
    """The items stamped since ``since``, by searches of a store that orders
    by ``updated_at``; None when they cannot tell what changed.

    The newest items first (a read that comes back full of items stamped
    since then is repeated with a larger limit), then one search that
    checks the prefix holds as many items as ``loaded`` and those new ones
    (``offset`` = that count - 1 gives exactly one item): a delete, an
    expiry or a write between the two reads fails it."""
    limit = _RECENT_FIRST
    while limit <= 2 * len(loaded.prefix):
        found = yield from _search(limit, 0)
        oldest = found[-1].updated_at if found else None
        if len(found) < limit or (isinstance(oldest, datetime) and oldest < since):
            new = {(i.namespace, i.key) for i in found} - loaded.prefix.keys()
            expected = len(loaded.prefix) + len(new)
            last = yield from _search(2, expected - 1)
            return found if len(last) == 1 else None
        limit *= _RECENT_GROWTH
    return None


class _Whole(list):  # type: ignore[type-arg]
    """A read of every item under the prefix (what _recent returns when it
    read the namespace whole)."""


def _in_memory(store: BaseStore, namespace: _Key) -> dict[str, Item] | None:
    """The namespace's own dict of items in LangGraph's ``InMemoryStore`` (not
    a subclass; not a copy: :func:`_read_in_place` lists it); None for any
    other store.

    ``InMemoryStore.search`` builds a ``SearchItem`` per item: about 37 ms
    at 10,000 items on this machine, against about 0.05 ms to list the
    values of its dict of the namespace (one C call, which no other thread
    interleaves with). Reading ``_data`` relies on InMemoryStore's layout
    (``dict[namespace, dict[key, Item]]``, each item filed under its own
    ``key``, LangGraph 1.x); any other layout falls back to ``search``.
    """
    if type(store).__module__ != "langgraph.store.memory" or (
        type(store).__name__ != "InMemoryStore"
    ):
        return None
    data = getattr(store, "_data", None)
    if not isinstance(data, dict):
        return None
    items = data.get(namespace)
    return {} if items is None else items if isinstance(items, dict) else None


class _InPlace(NamedTuple):
    """One read of an ``InMemoryStore``'s namespace: its items in its dict's
    order, and the dict copied when the read copied it."""

    items: list[Item]
    copy: dict[str, Item] | None = None

    @property
    def by_key(self) -> dict[str, Item]:
        """The read as the store's dict (each item under its own key)."""
        if self.copy is not None:
            return self.copy
        return {item.key: item for item in self.items}


def _read_in_place(items: dict[str, Item], *, copy: bool = False) -> _InPlace:
    """The namespace's items, listed by one C call (no other thread's write
    interleaves); with ``copy``, its dict copied first (one C call too) and
    then listed: only the rule's loop (:func:`_changed_by_key`) needs the
    dict, and copying it every turn cost a warm turn at 10,000 items about
    0.2 ms (in-process A/B, CPU: 0.90-0.94 without)."""
    if copy:
        copied = dict(items)
        return _InPlace(list(copied.values()), copied)
    return _InPlace(list(items.values()))


_Changed = tuple[list[Item], list[str], Optional[Iterable[str]]]


def _shortcut(kept: _InPlace, current: _InPlace) -> tuple[bool, _Changed | None]:
    """``(True, what changed)`` when nothing changed (None) or only new keys
    came, after the others (see :func:`_in_place_changes`); else ``(False,
    None)``: the rule's loop decides."""
    before, now = kept.items, current.items
    if now == before:
        return True, None
    read = len(before)
    if len(now) > read and now[:read] == before:
        return True, (now[read:], [], None)
    return False, None


def _in_place_changes(
    kept: _InPlace, items: dict[str, Item]
) -> tuple[_InPlace, _Changed | None]:
    """This read of an ``InMemoryStore``'s namespace (its dict ``items``)
    and what changed since ``kept``: the changed items, the keys gone and,
    for :meth:`_Loaded._replace`, the keys in order (None when no key read
    before changed); None when nothing changed.

    The rule is :func:`_changed_by_key`'s; its loop over every key costs
    about 1 ms at 10,000 items. The store's ``put`` of a new key, what an
    agent's turn meets (``remember_tool`` gives each memory a new id),
    appends it to the dict and leaves every other item where it was, so
    when the items read before are the first of those read now (a list
    comparison at C speed, about 0.03 ms: ``==`` is ``is`` first, then
    ``Item.__eq__``, as the rule compares), the rest are new keys and none
    is gone (:func:`_shortcut`). Any other change (a rewrite, a delete, a
    key put again) takes the rule's loop, on a copy of the dict (one C
    call). tests/test_langgraph.py checks the two agree after random writes.
    """
    read = _read_in_place(items)
    done, found = _shortcut(kept, read)
    if done:
        return read, found
    read = _read_in_place(items, copy=True)
    return read, _changed_by_key(kept.by_key, read.by_key)


def _changed_by_key(kept: dict[str, Item], current: dict[str, Item]) -> _Changed:
    """The one rule of what changed in an ``InMemoryStore``'s namespace: its
    ``put`` makes a new ``Item`` every time, so an item that is neither the
    object read last time under its key nor equal to it changed; a key
    read then and not now is gone."""
    changed = [
        item
        for key, item in current.items()
        if kept.get(key) is not item and kept.get(key) != item
    ]
    gone = [key for key in kept if key not in current]
    return changed, gone, current.keys()


def _read_turn(
    store: BaseStore,
    namespace: _Key,
    pools: Sequence[Pool] | None,
    ranking: str,
) -> tuple[_Loaded, int, _Reads | None]:
    """The namespace kept loaded, its generation and the reads that bring
    it up to date (carried out by _loaded_items or _aloaded_items); an
    ``InMemoryStore``'s namespace is brought up to date here, without reads."""
    _check_namespace(namespace)
    loaded = _loaded_for(store, namespace, pools, ranking)
    current = _in_memory(store, namespace)
    if current is not None:
        with loaded.lock:
            loaded.sync_in_place(current)
        return loaded, loaded.generation, None
    return loaded, loaded.generation, _recent(loaded, store, namespace)


def _apply(
    loaded: _Loaded,
    generation: int,
    found: list[Item],
    namespace: _Key,
    began: datetime,
) -> None:
    """Apply a turn's read, unless a newer read was applied meanwhile (the
    namespace is then at least as new as this read)."""
    with loaded.lock:
        if loaded.generation == generation:
            whole = isinstance(found, _Whole)
            at = found.at if isinstance(found, _Checked) else None
            loaded.sync(found, namespace, whole=whole, read_at=began, checked_at=at)


def _loaded_items(
    store: BaseStore,
    namespace: _Key,
    pools: Sequence[Pool] | None,
    ranking: str,
) -> _Loaded:
    """The namespace kept loaded, brought up to date through ``search``."""
    loaded, generation, reads = _read_turn(store, namespace, pools, ranking)
    if reads is not None:
        began = datetime.now(timezone.utc)
        found = _run(store, namespace, reads)
        _apply(loaded, generation, found, namespace, began)
    return loaded


async def _aloaded_items(
    store: BaseStore,
    namespace: _Key,
    pools: Sequence[Pool] | None,
    ranking: str,
) -> _Loaded:
    """The namespace kept loaded, brought up to date through ``asearch``."""
    loaded, generation, reads = _read_turn(store, namespace, pools, ranking)
    if reads is not None:
        began = datetime.now(timezone.utc)
        found = await _arun(store, namespace, reads)
        _apply(loaded, generation, found, namespace, began)
    return loaded


def remember(
    store: BaseStore,
    namespace: tuple[str, ...],
    entry: Mapping[str, Any],
    *,
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> list[str]:
    """Store one entry as the item's value, keyed by its ``id``; its warnings.

    The entry is validated by :func:`poolsplit_memory.check_entry`, the same
    rule the store's ``remember`` applies (size cap, NaN/inf priorities, NUL
    characters, ``poolsplit.validate``); an error writes nothing. ``pools``
    lets the check warn about a type no pool admits.

    Raises:
        poolsplit_memory.InvalidInput: the entry has no str ``id`` (the item
            key) or fails the check; ``.field`` names the field.
    """
    _check_namespace(namespace)
    key = entry.get("id") if isinstance(entry, Mapping) else None
    if not isinstance(key, str) or not key:
        raise InvalidInput(
            "id", f"must be a non-empty str (the BaseStore item key), got {key!r}"
        )
    stamped = [field for field in PROVENANCE if field in entry]
    if stamped:  # (issue 51: provenance is a store's to write, never a caller's)
        raise InvalidInput(
            stamped[0],
            "is stamped by a poolsplit store, never given with an entry; leave it out",
        )
    warnings = check_entry(
        entry,
        pools=pools,
        token_counter=token_counter,
        max_entry_tokens=max_entry_tokens,
    )
    store.put(namespace, key, dict(entry))
    return warnings


# ===========================================================================
# The three ways in: middleware, prompt callable, node
# ===========================================================================


class _MemoryMiddleware(AgentMiddleware):
    """Puts the framed pools into each model call: the always-scope entries in
    the one system prompt, the rest as a user message before the current
    turn (the call's messages only: the state is not changed)."""

    def __init__(
        self,
        pools: Sequence[Pool] | None,
        prompt: str,
        namespace: Namespace,
        headers: Mapping[str, str] | None,
        now: datetime | None,
        ranking: str,
    ) -> None:
        super().__init__()
        self.ranking = _check_ranking(ranking)
        self.pools = None if pools is None else list(pools)
        self.prompt = prompt
        self.namespace = namespace
        self.headers = headers
        self.now = now

    @property
    def name(self) -> str:
        return "PoolsplitMemory"

    def _store(self, request: ModelRequest) -> tuple[BaseStore, tuple[str, ...]]:
        store = request.runtime.store if request.runtime is not None else None
        if store is None:
            raise ValueError(
                "create_agent(..., store=...) is required: memory_middleware "
                "reads the entries from the agent's store"
            )
        return store, _namespace(self.namespace, get_config())

    def _request(self, request: ModelRequest, loaded: _Loaded) -> ModelRequest:
        history: list[AnyMessage] = [
            m for m in request.messages if not isinstance(m, SystemMessage)
        ]
        start = _latest_human(history)
        message = "" if start is None else history[start].text
        results, read = _filled(loaded, message, self.ranking, self.now)
        own = [request.system_message.text] if request.system_message else []
        own += [m.text for m in request.messages if isinstance(m, SystemMessage)]
        system, recalled = _memory_messages(
            _joined(self.prompt, *own), results, self.headers, read
        )
        at = len(history) if start is None else start
        messages = [*history[:at], *recalled, *history[at:]]
        return request.override(system_message=system, messages=messages)

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        store, space = self._store(request)
        loaded = _loaded_items(store, space, self.pools, self.ranking)
        return handler(self._request(request, loaded))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        store, space = self._store(request)
        loaded = await _aloaded_items(store, space, self.pools, self.ranking)
        return await handler(self._request(request, loaded))


def memory_middleware(
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
) -> AgentMiddleware:
    """Agent middleware for ``create_agent(..., middleware=[...], store=...)``.

    Before every model call it reads ``namespace`` (exactly) from the agent's
    store, fills ``pools`` for the latest human message and replaces the
    request's system message with ONE: ``prompt``, the agent's own
    ``system_prompt`` and any system message in the state, then the
    always-scope entries, framed; the other entries, framed, go into the
    call's messages as one ``HumanMessage`` just before the latest human
    message (never into the state). The messages are otherwise sent as the
    agent keeps them (history trimming is a separate middleware's job), so
    the latest question always reaches the model whole. ``namespace`` is a
    tuple or a function of the run's config (default: ``("memories",
    user_id)``). Sync and async agents both work (``search``/``asearch``).
    ``ranking``: as :func:`with_memory`'s.
    """
    return _MemoryMiddleware(pools, prompt, namespace, headers, now, ranking)


def memory_prompt(
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
) -> Callable[[Mapping[str, Any]], list[BaseMessage]]:
    """A ``prompt=`` callable for ``create_react_agent(..., store=store)``.

    Called with the agent's state before each model call, it reads the
    namespace the run's config names through ``langgraph.config.get_store()``
    (exactly that namespace, never a longer one) and returns
    :func:`with_memory`'s messages: one system message, the history trimmed
    to ``max_history_tokens``, the recalled context, the latest question
    whole. ``ranking``: as
    :func:`with_memory`'s.
    """
    ranking = _check_ranking(ranking)

    def memory_prompt(state: Mapping[str, Any]) -> list[BaseMessage]:
        store = get_store()
        if store is None:
            raise ValueError(
                "create_react_agent(..., store=...) is required: memory_prompt "
                "reads the entries from the agent's store"
            )
        space = _namespace(namespace, get_config())
        return _with_memory(
            state["messages"],
            _loaded_items(store, space, pools, ranking),
            prompt=prompt,
            max_history_tokens=max_history_tokens,
            headers=headers,
            now=now,
            ranking=ranking,
        )

    return memory_prompt


def memory_node(
    model: BaseChatModel,
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
) -> MemoryNode:
    """A LangGraph node that calls ``model`` with pooled memory injected.

    For a hand-built graph (compile it with ``store=``): it reads the
    namespace exactly, invokes ``model`` on :func:`with_memory`'s messages and
    adds only the reply to the state, so the memory is rebuilt every turn and
    never stored in the history. ``ranking``: as :func:`with_memory`'s.
    """
    ranking = _check_ranking(ranking)

    def call_model(
        state: Mapping[str, Any],
        *,
        config: RunnableConfig,
        store: Optional[BaseStore],  # noqa: UP045 - LangGraph reads this annotation
    ) -> dict[str, list[AnyMessage]]:
        if store is None:
            raise ValueError("compile the graph with store=...: entries live there")
        space = _namespace(namespace, config)
        messages = _with_memory(
            state["messages"],
            _loaded_items(store, space, pools, ranking),
            prompt=prompt,
            max_history_tokens=max_history_tokens,
            headers=headers,
            now=now,
            ranking=ranking,
        )
        return {"messages": [model.invoke(messages, config)]}

    return call_model


# ===========================================================================
# The agent writes memories back
# ===========================================================================

_TOOL_DESCRIPTION: Final = REMEMBER_DESCRIPTION  # the MCP tool's guidance too


def remember_tool(
    pools: Sequence[Pool] | None = None,
    *,
    namespace: Namespace = user_namespace,
    name: str = "remember",
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> BaseTool:
    """A tool the agent calls to write one memory into its store.

    The tool builds the entry with :func:`poolsplit_memory.build_entry` (a
    new ``id`` and ``created``), checks it with
    :func:`poolsplit_memory.check_entry` (the store's one write rule) and
    puts it into the namespace the run's config names, in the agent's store
    (``get_store()``). It answers ``{"id": ..., "warnings": [...]}``; an
    invalid memory is a tool error (``field: message``) the model reads and
    can correct, and nothing is written.
    """
    admitted = None if pools is None else list(pools)

    def write(
        content: str,
        type: str = "note",
        scope: Optional[str] = None,  # noqa: UP045 - read by the tool schema
        tags: Optional[list[str]] = None,  # noqa: UP045
    ) -> dict[str, Any]:
        store = get_store()
        if store is None:
            raise ValueError(
                "the agent needs store=...: remember_tool writes into the agent's store"
            )
        space = _namespace(namespace, get_config())
        try:
            entry = build_entry(content, type=type, scope=scope, tags=tags or ())
            warnings = remember(
                store,
                space,
                entry,
                pools=admitted,
                token_counter=token_counter,
                max_entry_tokens=max_entry_tokens,
            )
        except InvalidInput as exc:
            raise ToolException(str(exc)) from None
        return {"id": entry["id"], "warnings": warnings}

    return StructuredTool.from_function(
        write,
        name=name,
        description=_TOOL_DESCRIPTION,
        handle_tool_error=True,
    )
