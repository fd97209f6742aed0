"""LangChain and LangGraph: pooled memory, standing rules in the system message.

    pip install 'poolsplit-memory[langgraph]'

    from langchain.agents import create_agent
    from poolsplit_memory.langgraph import (
        PoolsplitStore, memory_middleware, remember_tool)

    agent = create_agent(model, [remember_tool()], middleware=[memory_middleware()],
                         store=PoolsplitStore("memory.db"))
    agent.invoke({"messages": [("user", "...")]}, {"configurable": {"user_id": "ada"}})

Entries live in the graph's store, one item per entry (the value is the
entry, the key its ``id``), under ``("memories", user_label(user_id))``
unless ``namespace=`` says otherwise. Each model call fills the pools for
the latest human message: the always-scope entries go after the agent's
prompt into ONE ``SystemMessage``, the rest, framed as data
(``poolsplit_memory._frame``), into one ``HumanMessage`` just before the
current turn; the ids per pool are in each message's
``additional_kwargs["poolsplit"]``.

With a :class:`PoolsplitStore` the recall is the store's own
(``Store.recall``: its index, its ranking, its snapshot kept between
turns). Any other ``BaseStore`` is read whole each turn
(:func:`load_entries`) and ranked by the core over what was read: correct
on every store, and O(namespace) per turn (benchmarks/langgraph_turn.py).
docs/langgraph.md is the reference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple, Optional, Protocol, Union
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

from poolsplit import Pool, TokenCounter, default_token_counter

from poolsplit_memory import (
    DEFAULT_MAX_ENTRY_TOKENS,
    REMEMBER_DESCRIPTION,
    InvalidInput,
    build_entry,
    check_entry,
    not_loaded,
)
from poolsplit_memory._entries import Prepared, prepare
from poolsplit_memory._frame import frame, split_always
from poolsplit_memory._langgraph_store import PoolsplitStore
from poolsplit_memory._pooled import Parts, lexical, owners
from poolsplit_memory._trust import PROVENANCE

__all__ = [
    "METADATA_KEY",
    "RANKINGS",
    "Namespace",
    "PoolsplitStore",
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
"""The ``additional_kwargs`` key of the injected ids; the model reads only text."""

# The limit of the first search of a namespace read whole (see load_entries).
FIRST_LIMIT: Final = 500

RANKINGS: Final = ("lexical", "core")
"""How a store other than PoolsplitStore is ranked within a pool: "lexical"
(BM25+ over the namespace's entries, the default) or "core"
(``poolsplit.default_scorer``). A PoolsplitStore ranks as it was opened."""

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


class _Report(NamedTuple):
    """What a turn says of the entries read (as :class:`Prepared` says it)."""

    skipped: list[dict[str, str]]
    notice: str
    warnings: list[str]


Results = dict[str, list[Any]]
Fill = Callable[[str], "tuple[Results, Prepared | _Report]"]
"""The pools for a message, and what was read."""


def _check_ranking(ranking: object) -> str:
    if ranking not in RANKINGS:
        raise ValueError(
            f"ranking must be one of {RANKINGS}, got {ranking!r} (semantic "
            "recall needs a PoolsplitStore opened with ranking='semantic')"
        )
    return str(ranking)


def _ranked(read: Prepared, ranking: str, now: datetime | None) -> Fill:
    """Fills the pools over entries read, ranked by the core (lexical: the
    statistics of the entries read); a quarantined one enters only the
    quarantine pool, whatever the ranking."""

    def fill(message: str) -> tuple[Results, Prepared]:
        at = datetime.now(timezone.utc) if now is None else now
        parts = Parts(owners(read.pools), ranking)
        parts.enter(enumerate(read.entries))
        results = parts.recall(
            read.pools,
            {"message": message},
            now=at,
            token_counter=default_token_counter,
            relevance=None if ranking == "core" else lexical(message, at),
        )
        return results, read

    return fill


def _recalled(
    store: PoolsplitStore,
    space: tuple[str, ...],
    pools: Sequence[Pool] | None,
    now: datetime | None,
) -> Fill:
    """Fills the pools by the store's own recall (its index and snapshot)."""

    def fill(message: str) -> tuple[Results, _Report]:
        got = store.recall(space, message, pools=pools, now=now)
        skipped = [{"id": s.id, "reason": s.reason} for s in got.skipped]
        return got.pools, _Report(skipped, not_loaded(got.always_skipped), got.warnings)

    return fill


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
    the latest ``HumanMessage``. ``entries`` are read by the store's rule
    (``loadable``): one that fails it is left out and listed in
    ``additional_kwargs["poolsplit"]["skipped"]`` (an always-scope one also
    named in the text), never fatal. The latest human message and all
    after it are sent whole, even past ``max_history_tokens``; the earlier
    history gets what is left (approximate count), trimmed to its most
    recent messages starting on a human one (``["history"]`` reports
    ``sent``, ``dropped``, ``current_tokens``, the budget). The system
    message is ``prompt``, any system messages of ``messages``, then the
    always-scope entries; the other entries are one ``HumanMessage``
    between the earlier history and the current turn.

    Raises:
        TypeError: ``max_history_tokens`` is not an int.
        ValueError: ``max_history_tokens`` is negative, or ``ranking`` is
            not one of :data:`RANKINGS`; ``retrieve_pools``' for bad pools.
    """
    read = prepare(list(entries), pools)
    fill = _ranked(read, _check_ranking(ranking), now)
    return _with_memory(messages, fill, prompt, max_history_tokens, headers)


def _latest_human(history: Sequence[BaseMessage]) -> int | None:
    """The position of the last ``HumanMessage``, or None."""
    for position in range(len(history) - 1, -1, -1):
        if isinstance(history[position], HumanMessage):
            return position
    return None


def _with_memory(
    messages: Sequence[BaseMessage],
    fill: Fill,
    prompt: str,
    max_history_tokens: int,
    headers: Mapping[str, str] | None,
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
    results, read = fill("" if start is None else history[start].text)
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
    """The ONE ``SystemMessage`` (the prompt, then the always-scope entries
    framed) and the other recalled entries, framed, as a ``HumanMessage``
    (none when none was recalled): LangChain's docs put standing
    instructions in the system prompt and context read from a store in a
    user message ("Context engineering in agents", Messages)."""
    always, context = split_always(results)
    text = _joined(prompt, frame(always, headers=headers) + read.notice)
    meta = {
        "pools": {name: [e.get("id") for e in got] for name, got in results.items()},
        "skipped": read.skipped,
        "warnings": read.warnings,
        **report,
    }
    system = SystemMessage(content=text, additional_kwargs={METADATA_KEY: meta})
    recalled = frame(context, headers=headers)
    if not recalled:
        return system, []
    ids = {name: [e.get("id") for e in got] for name, got in context.items()}
    marked = {METADATA_KEY: {"pools": ids}}
    return system, [HumanMessage(content=recalled, additional_kwargs=marked)]


# ===========================================================================
# Namespaces and the read of any BaseStore
# ===========================================================================


def user_namespace(config: RunnableConfig) -> tuple[str, ...]:
    """``("memories", user_label(user_id))`` of ``config["configurable"]``."""
    user: Any = (config.get("configurable") or {}).get("user_id")
    return ("memories", user_label(user))


# What LangGraph refuses in a label (".", NUL), and "%", the escape itself.
_ESCAPED: Final = {ord(c): f"%{ord(c):02X}" for c in "%.\x00"}


def user_label(user_id: str) -> str:
    """The namespace label of a user id: ``%``, ``.`` and NUL percent-escaped.

    >>> user_label("ada"), user_label("ada@example.com"), user_label("a%b")
    ('ada', 'ada@example%2Ecom', 'a%25b')

    Every id gets its own label (``urllib.parse.unquote`` gives it back),
    valid for LangGraph, which refuses "." and NUL in a label. O(len(id)).

    Raises:
        TypeError: ``user_id`` is neither a str nor None.
        ValueError: ``user_id`` is None or empty: it names nobody.
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


# Per store and prefix, the items its last read held: the next read asks for
# twice that at once (only a hint: any first limit reads the same items).
_sizes: WeakKeyDictionary[BaseStore, dict[tuple[str, ...], int]] = WeakKeyDictionary()


def _hint(
    store: BaseStore, namespace: tuple[str, ...]
) -> tuple[dict[tuple[str, ...], int], int]:
    _check_namespace(namespace)
    try:
        sizes = _sizes.setdefault(store, {})
    except TypeError:  # not hashable or weakly referable: no hint
        sizes = {}
    return sizes, max(FIRST_LIMIT, 2 * sizes.get(namespace, 0))


def _exact(found: Sequence[Item], namespace: tuple[str, ...]) -> list[Any]:
    """The values of exactly ``namespace``, once per key."""
    kept: dict[str, Any] = {}
    for item in found:
        if item.namespace == namespace:
            kept.setdefault(item.key, item.value)
    return list(kept.values())


def load_entries(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """Every item value in exactly ``namespace``, read by one ``search`` call.

    ``search`` promises at most ``limit`` items under a prefix, in an order
    each store chooses, and ``offset`` promises nothing across calls
    (``PostgresStore`` orders by ``updated_at`` alone: offset pages skipped
    and repeated items; ``MongoDBStore`` refuses ``offset``). So the prefix
    is read by one call whose limit is above its size: a read that comes
    back full is repeated with twice the limit until one comes back short.
    Only items whose namespace equals ``namespace`` are kept (a longer one
    is another user's). Cost: one search once the size is known, O(n).

    Raises:
        TypeError, ValueError: ``namespace`` is not a non-empty tuple of
            non-empty str.
    """
    sizes, limit = _hint(store, namespace)
    while True:
        found = store.search(namespace, limit=limit)
        if len(found) < limit:
            sizes[namespace] = len(found)
            return _exact(found, namespace)
        limit *= 2


async def _aload_entries(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """:func:`load_entries` through ``asearch``."""
    sizes, limit = _hint(store, namespace)
    while True:
        found = await store.asearch(namespace, limit=limit)
        if len(found) < limit:
            sizes[namespace] = len(found)
            return _exact(found, namespace)
        limit *= 2


def _fill(store: BaseStore, space: tuple[str, ...], options: _Options) -> Fill:
    """How this turn fills the pools: the store's recall, or a whole read."""
    if isinstance(store, PoolsplitStore):
        return _recalled(store, space, options.pools, options.now)
    read = prepare(load_entries(store, space), options.pools)
    return _ranked(read, options.ranking, options.now)


async def _afill(store: BaseStore, space: tuple[str, ...], options: _Options) -> Fill:
    if isinstance(store, PoolsplitStore):
        return _recalled(store, space, options.pools, options.now)
    read = prepare(await _aload_entries(store, space), options.pools)
    return _ranked(read, options.ranking, options.now)


class _Options(NamedTuple):
    pools: list[Pool] | None
    namespace: Namespace
    ranking: str
    now: datetime | None


def _options(
    pools: Sequence[Pool] | None, namespace: Namespace, ranking: str, now: Any
) -> _Options:
    chosen = None if pools is None else list(pools)
    return _Options(chosen, namespace, _check_ranking(ranking), now)


def remember(
    store: BaseStore,
    namespace: tuple[str, ...],
    entry: Mapping[str, Any],
    *,
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> list[str]:
    """Store one entry as an item keyed by its ``id``; return its warnings.

    Checked first by :func:`poolsplit_memory.check_entry`, the store's one
    write rule (``pools`` lets it warn of a type no pool admits); an error
    writes nothing.

    Raises:
        poolsplit_memory.InvalidInput: no non-empty str ``id``, provenance
            given (a store stamps it), or the check fails; ``.field`` names
            the field.
    """
    _check_namespace(namespace)
    key = entry.get("id") if isinstance(entry, Mapping) else None
    if not isinstance(key, str) or not key:
        raise InvalidInput(
            "id", f"must be a non-empty str (the BaseStore item key), got {key!r}"
        )
    stamped = [field for field in PROVENANCE if field in entry]
    if stamped:
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


def _needed(store: BaseStore | None, how: str) -> BaseStore:
    if store is None:
        raise ValueError(f"{how} is required: the memories live in the graph's store")
    return store


class _MemoryMiddleware(AgentMiddleware):
    """Puts the framed pools into each model call (never into the state)."""

    def __init__(
        self, options: _Options, prompt: str, headers: Mapping[str, str] | None
    ) -> None:
        super().__init__()
        self.options, self.prompt, self.headers = options, prompt, headers

    @property
    def name(self) -> str:
        return "PoolsplitMemory"

    def _where(self, request: ModelRequest) -> tuple[BaseStore, tuple[str, ...]]:
        store = request.runtime.store if request.runtime is not None else None
        how = "create_agent(..., store=...)"
        return _needed(store, how), _namespace(self.options.namespace, get_config())

    def _request(self, request: ModelRequest, fill: Fill) -> ModelRequest:
        history: list[AnyMessage] = [
            m for m in request.messages if not isinstance(m, SystemMessage)
        ]
        start = _latest_human(history)
        results, read = fill("" if start is None else history[start].text)
        own = [request.system_message.text] if request.system_message else []
        own += [m.text for m in request.messages if isinstance(m, SystemMessage)]
        system, recalled = _memory_messages(
            _joined(self.prompt, *own), results, self.headers, read
        )
        at = len(history) if start is None else start
        messages = [*history[:at], *recalled, *history[at:]]
        return request.override(system_message=system, messages=messages)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        store, space = self._where(request)
        return handler(self._request(request, _fill(store, space, self.options)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        store, space = self._where(request)
        fill = await _afill(store, space, self.options)
        # a PoolsplitStore's recall blocks: it runs in a worker thread
        return await handler(await asyncio.to_thread(self._request, request, fill))


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

    Before every model call it fills ``pools`` for the latest human message
    from ``namespace`` (exactly; default ``("memories", user_id)``) of the
    agent's store and replaces the system message with ONE: ``prompt``,
    the agent's ``system_prompt`` and any system message of the state, then
    the always-scope entries; the other entries go into the call's messages
    as one ``HumanMessage`` just before the latest human message. Sync and
    async agents both work. ``ranking``: :data:`RANKINGS`.
    """
    return _MemoryMiddleware(_options(pools, namespace, ranking, now), prompt, headers)


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
    """A ``prompt=`` callable for ``create_react_agent(..., store=store)``:
    :func:`with_memory`'s messages for the agent's state, the entries of
    the namespace the run's config names in ``get_store()``."""
    options = _options(pools, namespace, ranking, now)

    def memory_prompt(state: Mapping[str, Any]) -> list[BaseMessage]:
        store = _needed(get_store(), "create_react_agent(..., store=...)")
        fill = _fill(store, _namespace(namespace, get_config()), options)
        return _with_memory(
            state["messages"], fill, prompt, max_history_tokens, headers
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
    """A node that calls ``model`` on :func:`with_memory`'s messages and adds
    only the reply to the state (compile the graph with ``store=``)."""
    options = _options(pools, namespace, ranking, now)

    def call_model(
        state: Mapping[str, Any],
        *,
        config: RunnableConfig,
        store: Optional[BaseStore],  # noqa: UP045 - LangGraph reads this annotation
    ) -> dict[str, list[AnyMessage]]:
        fill = _fill(
            _needed(store, "compile(store=...)"), _namespace(namespace, config), options
        )
        messages = _with_memory(
            state["messages"], fill, prompt, max_history_tokens, headers
        )
        return {"messages": [model.invoke(messages, config)]}

    return call_model


def remember_tool(
    pools: Sequence[Pool] | None = None,
    *,
    namespace: Namespace = user_namespace,
    name: str = "remember",
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> BaseTool:
    """A tool the agent calls to write one memory into its store.

    It builds the entry (``build_entry``: a new ``id`` and ``created``),
    checks it (:func:`remember`) and puts it into the namespace the run's
    config names, answering ``{"id": ..., "warnings": [...]}``; an invalid
    memory is a tool error (``field: message``) and writes nothing.
    """
    admitted = None if pools is None else list(pools)

    def write(
        content: str,
        type: str = "note",
        scope: Optional[str] = None,  # noqa: UP045 - read by the tool schema
        tags: Optional[list[str]] = None,  # noqa: UP045
    ) -> dict[str, Any]:
        store = _needed(get_store(), "the agent's store=...")
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
        write, name=name, description=REMEMBER_DESCRIPTION, handle_tool_error=True
    )
