"""LangChain and LangGraph: pooled memory in the agent's one system message.

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
refuses in a label, so ``ada@example.com`` is a user too). Each turn reads
that namespace **exactly** (``search`` matches a prefix; items of
``("memories", "ada", "archive")`` are another namespace and never loaded for
``("memories", "ada")``), whole, in one ``search`` call that no order or
missing ``offset`` of the store can cut (:func:`load_entries`), fills the
pools for the latest human message and puts the agent's prompt and the rendered pools
into **one** ``SystemMessage`` (several providers reject a second one). The
ids injected per pool are in its ``additional_kwargs["poolsplit"]``.

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

from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from datetime import datetime
from typing import Any, Final, Optional, Protocol, Union
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
    from langgraph.store.base import BaseStore, Item
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"poolsplit_memory.langgraph needs LangChain and LangGraph ({exc.name} is "
        "missing): pip install 'poolsplit-memory[langgraph]' (Python 3.11+)"
    ) from exc

from poolsplit import (
    Pool,
    TokenCounter,
    default_scorer,
    default_token_counter,
    render,
    retrieve_pools,
)

from poolsplit_memory import (
    DEFAULT_MAX_ENTRY_TOKENS,
    REMEMBER_DESCRIPTION,
    InvalidInput,
    build_entry,
    check_entry,
)
from poolsplit_memory._entries import Prepared, prepare
from poolsplit_memory._ranking import Statistics

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
    """The model's input: one merged system message, then the history.

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
    ``prompt`` instead of being sent again.

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


def _filled(
    read: Prepared, message: str, ranking: str, now: datetime | None
) -> dict[str, list[Any]]:
    """The pools for ``message``, ranked as a store with this ``ranking``
    ranks them (the lexical statistics are those of the entries read)."""
    context = {"message": message}
    scorer = (
        default_scorer
        if ranking == "core"
        else Statistics(read.entries).scorer(context)
    )
    return retrieve_pools(read.entries, read.pools, context, scorer=scorer, now=now)


def _with_memory(
    messages: Sequence[BaseMessage],
    read: Prepared,
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
    results = _filled(read, message, ranking, now)
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
    system = _system_message(
        _joined(prompt, *own), results, headers, read, history=report
    )
    return [system, *kept, *current]


def _joined(*parts: str) -> str:
    return "\n\n".join(part.rstrip("\n") for part in parts if part)


def _system_message(
    prompt: str,
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    headers: Mapping[str, str] | None,
    read: Prepared,
    **report: Any,
) -> SystemMessage:
    """The agent's prompt, then the rendered pools, as ONE ``SystemMessage``.

    An always-scope entry that could not be loaded is named in the text
    itself, so the model (and whoever reads the transcript) knows a
    correction is missing; every skipped entry is in the metadata.
    """
    text = _joined(prompt, render(results, headers=headers) + read.notice)
    pools = {name: [e.get("id") for e in chosen] for name, chosen in results.items()}
    meta = {
        "pools": pools,
        "skipped": read.skipped,
        "warnings": read.warnings,
        **report,
    }
    return SystemMessage(content=text, additional_kwargs={METADATA_KEY: meta})


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


# One reading rule for search and asearch: _reads decides, without I/O, what
# to ask for next; _load_items and _aload_items only carry out its requests.
_Reads = Generator[int, Sequence[Item], list[Item]]


# The number of items each prefix of each store held at its last read: the
# next read asks for twice that at once, so a namespace that has not doubled
# since is read by one search (measured on PostgresStore at 6,000 items: the
# doubling reads took about 2x one complete search). Only a hint: any first
# limit gives the same items. Weak keys: a store no longer used is forgotten.
_sizes: WeakKeyDictionary[BaseStore, dict[tuple[str, ...], int]] = WeakKeyDictionary()


def _reads(store: BaseStore, namespace: tuple[str, ...]) -> _Reads:
    """Yields each read's limit, is sent that read's items, returns the
    namespace's items once a read comes back short (see load_entries)."""
    _check_namespace(namespace)
    try:
        sizes = _sizes.setdefault(store, {})
    except TypeError:  # a store without a hash or weak references: no hint
        sizes = {}
    limit = max(FIRST_LIMIT, 2 * sizes.get(namespace, 0))
    while True:
        found = yield limit
        if len(found) < limit:
            sizes[namespace] = len(found)
            return _exact(found, namespace)
        limit *= 2


def _load_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """:func:`_reads` carried out through ``search``."""
    reads = _reads(store, namespace)
    limit = next(reads)
    while True:
        try:
            limit = reads.send(store.search(namespace, limit=limit))
        except StopIteration as done:
            items: list[Item] = done.value
            return items


async def _aload_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """:func:`_reads` carried out through ``asearch`` (an async store's path)."""
    reads = _reads(store, namespace)
    limit = next(reads)
    while True:
        try:
            limit = reads.send(await store.asearch(namespace, limit=limit))
        except StopIteration as done:
            items: list[Item] = done.value
            return items


def _exact(found: Sequence[Item], namespace: tuple[str, ...]) -> list[Item]:
    """The items of exactly ``namespace``, once per key."""
    kept: dict[str, Item] = {}
    for item in found:
        if item.namespace == namespace:
            kept.setdefault(item.key, item)
    return list(kept.values())


def _prepare(items: list[Item], pools: Sequence[Pool] | None) -> Prepared:
    """The items' values by the store's rule, each named by its key."""
    return prepare([i.value for i in items], pools, ids=[i.key for i in items])


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
    """Puts the rendered pools into the agent's one system prompt each call."""

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

    def _request(self, request: ModelRequest, items: list[Item]) -> ModelRequest:
        read = _prepare(items, self.pools)
        history: list[AnyMessage] = [
            m for m in request.messages if not isinstance(m, SystemMessage)
        ]
        start = _latest_human(history)
        message = "" if start is None else history[start].text
        results = _filled(read, message, self.ranking, self.now)
        own = [request.system_message.text] if request.system_message else []
        own += [m.text for m in request.messages if isinstance(m, SystemMessage)]
        system = _system_message(
            _joined(self.prompt, *own), results, self.headers, read
        )
        return request.override(system_message=system, messages=history)

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        store, space = self._store(request)
        return handler(self._request(request, _load_items(store, space)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        store, space = self._store(request)
        items = await _aload_items(store, space)
        return await handler(self._request(request, items))


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
    ``system_prompt`` and any system message in the state, then the rendered
    pools. The messages are sent as the
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
    to ``max_history_tokens``, the latest question whole. ``ranking``: as
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
            _prepare(_load_items(store, space), pools),
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
        items = _load_items(store, _namespace(namespace, config))
        messages = _with_memory(
            state["messages"],
            _prepare(items, pools),
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
