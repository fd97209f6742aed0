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
``("memories", config["configurable"]["user_id"])`` unless ``namespace=``
says otherwise. Each turn reads that namespace **exactly** (``search`` matches
a prefix; items of ``("memories", "ada", "archive")`` are another namespace and
never loaded for ``("memories", "ada")``), page by page, fills the pools for
the latest human message and puts the agent's prompt and the rendered pools
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

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Optional, Protocol, Union

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

__all__ = [
    "METADATA_KEY",
    "Namespace",
    "load_entries",
    "memory_middleware",
    "memory_node",
    "memory_prompt",
    "remember",
    "remember_tool",
    "user_namespace",
    "with_memory",
]

METADATA_KEY: Final = "poolsplit"
"""The ``additional_kwargs`` key of the system message: injected ids and the
history report; the model reads only the text."""

# Items read per BaseStore.search call while loading a namespace. search takes
# one limit per call, so a namespace is read page by page, never cut at a limit.
PAGE_SIZE: Final = 500
# Whole reads of a namespace of several pages before giving up (see
# load_entries): two agree unless it changes during the read.
MAX_PASSES: Final = 4

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

    Raises:
        TypeError: ``max_history_tokens`` is not an int.
        ValueError: ``max_history_tokens`` is negative.
        The errors of ``poolsplit.retrieve_pools`` for bad pools.
    """
    return _with_memory(
        messages,
        prepare(list(entries), pools),
        prompt=prompt,
        max_history_tokens=max_history_tokens,
        headers=headers,
        now=now,
    )


def _latest_human(history: Sequence[BaseMessage]) -> int | None:
    """The position of the last ``HumanMessage``, or None."""
    for position in range(len(history) - 1, -1, -1):
        if isinstance(history[position], HumanMessage):
            return position
    return None


def _with_memory(
    messages: Sequence[BaseMessage],
    read: Prepared,
    *,
    prompt: str,
    max_history_tokens: int,
    headers: Mapping[str, str] | None,
    now: datetime | None,
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
    results = retrieve_pools(read.entries, read.pools, {"message": message}, now=now)
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
    """``("memories", user_id)`` from ``config["configurable"]["user_id"]``."""
    user = (config.get("configurable") or {}).get("user_id")
    if not isinstance(user, str) or not user:
        raise ValueError(
            "config['configurable']['user_id'] must be a non-empty str, "
            f"got {user!r}: it names the user's memory namespace"
        )
    return ("memories", user)


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
    """Every item value in exactly ``namespace``, read page by page.

    ``BaseStore.search`` matches a namespace *prefix*: an item under
    ``("memories", "ada", "archive")`` comes back for ``("memories", "ada")``.
    Only items whose namespace equals ``namespace`` are kept, because with
    user ids as namespaces a longer one is another user's data. Pages of
    ``PAGE_SIZE`` items are read until a short page, so no single ``limit``
    cuts the namespace.

    ``search`` pages by offset, so an item deleted between two page reads
    shifts the next page and one item (maybe a correction) would be missed.
    One page is one read; when the prefix needs several, the whole read is
    repeated until two passes in a row find the same keys (a delete between
    pages removes an item the pass already had, so the next pass differs),
    at most ``MAX_PASSES`` passes. Cost: one search per page of the prefix's
    items, twice when there is more than one page.

    Raises:
        RuntimeError: the namespace changed during every one of
            ``MAX_PASSES`` passes; retry the turn.
    """
    return [item.value for item in _load_items(store, namespace)]


def _load_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    _check_namespace(namespace)
    passes: list[dict[str, Item]] = []
    while len(passes) < MAX_PASSES:
        found: dict[str, Item] = {}
        pages = 0
        while True:
            page = store.search(namespace, limit=PAGE_SIZE, offset=pages * PAGE_SIZE)
            pages += 1
            _keep_exact(found, page, namespace)
            if len(page) < PAGE_SIZE:
                break
        if _stable(passes, found, pages):
            return list(found.values())
        passes.append(found)
    raise _unstable(namespace)


async def _aload_items(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """:func:`_load_items` through ``asearch`` (an async store's native path)."""
    _check_namespace(namespace)
    passes: list[dict[str, Item]] = []
    while len(passes) < MAX_PASSES:
        found: dict[str, Item] = {}
        pages = 0
        while True:
            page = await store.asearch(
                namespace, limit=PAGE_SIZE, offset=pages * PAGE_SIZE
            )
            pages += 1
            _keep_exact(found, page, namespace)
            if len(page) < PAGE_SIZE:
                break
        if _stable(passes, found, pages):
            return list(found.values())
        passes.append(found)
    raise _unstable(namespace)


def _stable(passes: list[dict[str, Item]], found: dict[str, Item], pages: int) -> bool:
    """One page is one consistent read; several must match the previous pass."""
    return pages == 1 or (bool(passes) and passes[-1].keys() == found.keys())


def _unstable(namespace: tuple[str, ...]) -> RuntimeError:
    return RuntimeError(
        f"namespace {namespace!r} changed during each of {MAX_PASSES} reads; "
        "retry the turn"
    )


def _keep_exact(
    entries: dict[str, Item], page: Sequence[Item], namespace: tuple[str, ...]
) -> None:
    """Add the page's items of exactly ``namespace``, once per key (a write
    between two pages can shift an item into the next one)."""
    for item in page:
        if item.namespace == namespace:
            entries.setdefault(item.key, item)


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
    ) -> None:
        super().__init__()
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
        results = retrieve_pools(
            read.entries, read.pools, {"message": message}, now=self.now
        )
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
    """
    return _MemoryMiddleware(pools, prompt, namespace, headers, now)


def memory_prompt(
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> Callable[[Mapping[str, Any]], list[BaseMessage]]:
    """A ``prompt=`` callable for ``create_react_agent(..., store=store)``.

    Called with the agent's state before each model call, it reads the
    namespace the run's config names through ``langgraph.config.get_store()``
    (exactly that namespace, never a longer one) and returns
    :func:`with_memory`'s messages: one system message, the history trimmed
    to ``max_history_tokens``, the latest question whole.
    """

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
) -> MemoryNode:
    """A LangGraph node that calls ``model`` with pooled memory injected.

    For a hand-built graph (compile it with ``store=``): it reads the
    namespace exactly, invokes ``model`` on :func:`with_memory`'s messages and
    adds only the reply to the state, so the memory is rebuilt every turn and
    never stored in the history.
    """

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
