"""LangChain and LangGraph: pooled memory, standing rules in the system message.

    pip install 'poolsplit-memory[langgraph]'

``create_agent(model, [remember_tool()], middleware=[memory_middleware()],
store=PoolsplitStore("memory.db"))``: each model call recalls the user's
memories (``("memories", user_id)``) for the latest human message, the
always-scope ones in ONE ``SystemMessage``, the rest as one framed
``HumanMessage`` before the current turn. A :class:`PoolsplitStore` recalls
through its own index; any other ``BaseStore`` is read whole every turn
(:func:`load_entries`, O(namespace)), checked and split by pool again only
when the read changed, and ranked. See docs/langgraph.md.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple, Optional, TypeVar, Union
from weakref import WeakKeyDictionary

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import (
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
from poolsplit_memory._langgraph_store import PoolsplitStore, _name
from poolsplit_memory._pooled import Parts, lexical, owners
from poolsplit_memory._results import recalled
from poolsplit_memory._terms import read_times
from poolsplit_memory._trust import PROVENANCE
from poolsplit_memory._validate import _zone, _zoned

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
RANKINGS: Final = ("lexical", "core")
"""How entries read from another store rank within a pool: BM25+ over the
namespace ("lexical") or ``poolsplit.default_scorer`` ("core"). A
PoolsplitStore ranks as it was opened."""
FIRST_LIMIT: Final = 500  # the first search of a namespace read whole

Namespace = Union[tuple[str, ...], Callable[[RunnableConfig], tuple[str, ...]]]
"""A namespace, or a function of the run's config that returns one."""
Fill = Callable[[str], "tuple[Mapping[str, Sequence[Any]], Prepared]"]
"""The pools for a message, and what was read (skipped, notice, warnings)."""


_T = TypeVar("_T")


class _Options(NamedTuple):
    pools: list[Pool] | None
    namespace: Namespace
    ranking: str
    now: datetime | None
    tz: str | None


def _options(
    pools: Any, namespace: Namespace, ranking: object, now: Any, tz: Any = None
) -> _Options:
    _zone(tz)  # InvalidInput naming tz, at once
    if ranking not in RANKINGS:
        raise ValueError(
            f"ranking must be one of {RANKINGS}, got {ranking!r} (semantic recall "
            "is a poolsplit store's: PoolsplitStore or open_store(ranking=...))"
        )
    return _Options(
        None if pools is None else list(pools), namespace, str(ranking), now, tz
    )


class _Built(NamedTuple):
    """Entries read by the store's rule and split by part, ready to rank."""

    read: Prepared
    parts: Parts
    lock: threading.Lock  # (a recall fills a part's caches when first asked)
    values: int  # how many values were read (loaded, skipped or left out)


def _build(values: Sequence[Any], options: _Options) -> _Built:
    read = prepare(values, options.pools)
    parts = Parts(owners(read.pools), options.ranking)
    parts.enter(enumerate(read.entries))
    return _Built(read, parts, threading.Lock(), len(values))


def _ranked(built: _Built, options: _Options) -> Fill:
    """The pools over entries read, ranked by the core (lexical: by their
    statistics); a quarantined one enters only the quarantine pool."""

    def fill(message: str) -> tuple[Mapping[str, Sequence[Any]], Prepared]:
        at = datetime.now(timezone.utc) if options.now is None else options.now
        relevance = None
        if options.ranking != "core":  # the times in the user's days, as a store
            times = read_times(message, _zoned(at, _zone(options.tz)))
            relevance = lexical(message, at, times)
        context = {"message": message}
        counter = default_token_counter
        with built.lock:  # each pool scored by one loop over its part: at
            # 10,000 entries about as fast as a part's index, which a kept
            # build would build (benchmarks/README.md, "Another BaseStore")
            got = built.parts.recall(
                built.read.pools,
                context,
                now=at,
                token_counter=counter,
                relevance=relevance,
                scan=True,
            )
        read = built.read  # (a turn's lists its own: the build is kept)
        skipped = [dict(item) for item in read.skipped]
        return got, read._replace(skipped=skipped, warnings=list(read.warnings))

    return fill


# Per store, the builds of its last reads: the least recently used go while
# there are more than KEPT_READS, or their reads held more than KEPT_VALUES
# values in all (about 18 MiB a build of 10,000 short memories); the newest
# is always kept.
KEPT_READS: Final = 64
KEPT_VALUES: Final = 50_000
_reads: WeakKeyDictionary[BaseStore, OrderedDict[Any, tuple[str, _Built]]] = (
    WeakKeyDictionary()
)
_reads_lock = threading.Lock()


def _plain(value: Any) -> Any:
    """A copy of ``value`` when it is made of JSON's values alone, of their
    exact types (dict with str keys, list, str, int, bool, None, a finite
    float; no subclass, tuple or NaN); else raise TypeError."""
    kind = type(value)
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise TypeError("a key that is not a str")
        return {key: _plain(item) for key, item in value.items()}
    if kind is list:
        return [_plain(item) for item in value]
    if kind is float and not math.isfinite(value):
        raise TypeError("NaN or infinity")
    if kind in (str, int, bool, float) or value is None:
        return value
    raise TypeError(f"a {kind.__name__}")


def _seen(values: list[Any]) -> tuple[str, list[Any]] | None:
    """What a read is compared by, and the copy of it to build: its values'
    JSON text, exact for values of JSON's exact types (:func:`_plain`: ``1``,
    ``1.0`` and ``True`` differ), taken from a copy, so that a value changed
    in place later is a change and never the build's; None for a read
    holding any other value, or one nested too deep or a number too long to
    write, which is never kept."""
    try:
        copy = _plain(values)
        return json.dumps(copy, ensure_ascii=False), copy
    except (TypeError, ValueError, RecursionError):
        return None


def _read(store: BaseStore, space: tuple[str, ...], options: _Options) -> _Built:
    """The namespace read whole (:func:`load_entries`: every write of any
    process is seen) and built, or the last read's build when the values
    read are the same (:func:`_seen`)."""
    values = load_entries(store, space)
    seen = _seen(values)
    pools = None if options.pools is None else tuple(options.pools)
    key = (space, options.ranking, pools)
    with _reads_lock:
        kept = _of_store(_reads, store, OrderedDict)
        found = kept.pop(key, None)
        if found is not None and seen is not None and found[0] == seen[0]:
            kept[key] = found
            return found[1]
        found = None  # (a changed build is let go before the next one)
    if seen is None:
        return _build(values, options)
    text, copy = seen
    built = _build(copy, options)
    with _reads_lock:
        kept[key] = (text, built)
        held = sum(1 + b.values for _, b in kept.values())
        while (held > KEPT_VALUES or len(kept) > KEPT_READS) and len(kept) > 1:
            _, (_, dropped) = kept.popitem(last=False)
            held -= 1 + dropped.values
    return built


def _fill(store: BaseStore, space: tuple[str, ...], options: _Options) -> Fill:
    """A PoolsplitStore's own recall, or the namespace read whole and ranked."""
    if not isinstance(store, PoolsplitStore):
        return _ranked(_read(store, space, options), options)

    def fill(message: str) -> tuple[Mapping[str, Sequence[Any]], Prepared]:
        got = store.recall(space, message, pools=options.pools, now=options.now,
                           tz=options.tz)  # fmt: skip
        skipped = [{"id": s.id, "reason": s.reason} for s in got.skipped]
        notice = not_loaded(got.always_skipped)
        return recalled(got), Prepared([], [], skipped, notice, got.warnings)

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
    tz: str | None = None,
) -> list[BaseMessage]:
    """The model's input: one system message, the history, the recall.

    The pools are filled from ``entries`` (read by the store's rule: a bad
    one is skipped and named, never fatal) for the latest human message,
    which is sent whole with all after it; the earlier history gets what
    is left of ``max_history_tokens``. docs/langgraph.md has the details.

    ``tz`` (an IANA name: ``"Europe/Paris"``) is the user's time zone: the
    times the message names ("yesterday") are the user's days, as in
    ``Store.recall``; every adapter takes it.

    Raises:
        TypeError: ``max_history_tokens`` is not an int.
        ValueError: it is negative, or ``ranking`` is not in :data:`RANKINGS`.
        InvalidInput: ``tz`` names no time zone.
    """
    options = _options(pools, ("-",), ranking, now, tz)
    fill = _ranked(_build(list(entries), options), options)
    return _with_memory(messages, fill, prompt, max_history_tokens, headers)


def _split(messages: Sequence[BaseMessage]) -> tuple[list[Any], list[str], int | None]:
    """The non-system messages, the system texts, the latest human's place."""
    history = [m for m in messages if not isinstance(m, SystemMessage)]
    own = [str(m.text) for m in messages if isinstance(m, SystemMessage)]
    humans = [i for i, m in enumerate(history) if isinstance(m, HumanMessage)]
    return history, own, humans[-1] if humans else None


def _with_memory(
    messages: Sequence[BaseMessage],
    fill: Fill,
    prompt: str,
    budget: int,
    headers: Mapping[str, str] | None,
) -> list[BaseMessage]:
    if isinstance(budget, bool) or not isinstance(budget, int):
        kind = type(budget).__name__
        raise TypeError(f"max_history_tokens must be an int, got {kind}")
    if budget < 0:
        raise ValueError(f"max_history_tokens must be >= 0, got {budget}")
    history, own, start = _split(messages)
    current = [] if start is None else history[start:]
    earlier = history if start is None else history[:start]
    results, read = fill("" if start is None else history[start].text)
    current_tokens = count_tokens_approximately(current)
    room = budget - current_tokens
    kept: list[BaseMessage] = []
    if room > 0 and earlier:
        counter = count_tokens_approximately
        kept = trim_messages(
            earlier, max_tokens=room, strategy="last", start_on="human",
            token_counter=counter,
        )  # fmt: skip
    report = {
        "sent": len(kept) + len(current), "dropped": len(earlier) - len(kept),
        "current_tokens": current_tokens, "max_history_tokens": budget,
    }  # fmt: skip
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
    read: Prepared,
    **report: Any,
) -> tuple[SystemMessage, list[HumanMessage]]:
    """The ONE system message (the prompt, then the always-scope entries
    framed) and the other entries, framed, as a ``HumanMessage`` (LangChain's
    docs put context read from a store in a user message)."""
    always, context = split_always(results)
    text = _joined(prompt, frame(always, headers=headers) + read.notice)
    ids = {name: [e.get("id") for e in got] for name, got in results.items()}
    meta = {"pools": ids, "skipped": read.skipped, "warnings": read.warnings, **report}
    system = SystemMessage(content=text, additional_kwargs={METADATA_KEY: meta})
    recalled = frame(context, headers=headers)
    if not recalled:
        return system, []
    ids = {name: [e.get("id") for e in got] for name, got in context.items()}
    marked = {METADATA_KEY: {"pools": ids}}
    return system, [HumanMessage(content=recalled, additional_kwargs=marked)]


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

    Each id has its own label, valid for LangGraph; ``unquote`` reverses it.

    Raises:
        TypeError: ``user_id`` is neither a str nor None.
        ValueError: ``user_id`` is None or empty: it names nobody.
    """
    if user_id is not None and not isinstance(user_id, str):
        kind = type(user_id).__name__
        raise TypeError(
            f"user_id must be a str (config['configurable']['user_id']), got {kind}"
        )
    if not user_id:
        raise ValueError(
            f"user_id must be a non-empty str, got {user_id!r}: it names the "
            "user's memory namespace (config['configurable']['user_id'])"
        )
    return user_id.translate(_ESCAPED)


def _namespace(namespace: Namespace, config: RunnableConfig) -> tuple[str, ...]:
    space = namespace(config) if callable(namespace) else namespace
    _name(space)  # LangGraph's rule for a namespace
    return space


# Per store and prefix, the items its last read held: the next read asks for
# twice that at once (a hint: any first limit reads the same items).
_sizes: WeakKeyDictionary[BaseStore, dict[tuple[str, ...], int]] = WeakKeyDictionary()


def _of_store(
    table: WeakKeyDictionary[BaseStore, _T], store: BaseStore, new: Callable[[], _T]
) -> _T:
    """``table``'s state for ``store`` (``new()`` the first time); a fresh
    one, kept nowhere, for a store that cannot be a key (not hashable or
    weakly referable): nothing is remembered of it."""
    try:
        return table.setdefault(store, new())
    except TypeError:
        return new()


def _hint(store: BaseStore, space: tuple[str, ...]) -> tuple[dict[Any, int], int]:
    _name(space)
    sizes: dict[Any, int] = _of_store(_sizes, store, dict)
    return sizes, max(FIRST_LIMIT, 2 * sizes.get(space, 0))


def _exact(found: Sequence[Item], space: tuple[str, ...]) -> list[Any]:
    """The values of exactly ``space``, once per key."""
    kept: dict[str, Any] = {}
    for item in found:
        if item.namespace == space:
            kept.setdefault(item.key, item.value)
    return list(kept.values())


def load_entries(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """Every item value in exactly ``namespace``, read by one ``search`` call.

    ``offset`` promises nothing across calls (a store's order may change;
    some refuse it), so the prefix is read by one call whose limit is above
    its size: a read that comes back full is repeated with twice the limit.
    Items of a longer namespace are left out. O(n) per call.

    Raises:
        ValueError: ``namespace`` is not a valid LangGraph namespace.
    """
    sizes, limit = _hint(store, namespace)
    while len(found := store.search(namespace, limit=limit)) >= limit:
        limit *= 2
    sizes[namespace] = len(found)
    return _exact(found, namespace)


def remember(
    store: BaseStore,
    namespace: tuple[str, ...],
    entry: Mapping[str, Any],
    *,
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> list[str]:
    """Store one entry as an item keyed by its ``id``, checked first by the
    store's write rule (``check_entry``); return its warnings.

    Raises:
        InvalidInput: no non-empty str ``id``, provenance given (a store
            stamps it) or the check fails (``.field`` names the field).
    """
    _name(namespace)
    key = entry.get("id") if isinstance(entry, Mapping) else None
    if not isinstance(key, str) or not key:
        raise InvalidInput("id", f"must be a non-empty str (the item key), got {key!r}")
    for field in PROVENANCE:
        if field in entry:
            raise InvalidInput(field, "is stamped by a poolsplit store; leave it out")
    warnings = check_entry(entry, pools=pools, token_counter=token_counter,
                           max_entry_tokens=max_entry_tokens)  # fmt: skip
    store.put(namespace, key, dict(entry))
    return warnings


def _needed(store: BaseStore | None, how: str) -> BaseStore:
    if store is None:
        raise ValueError(f"{how} is required: the memories live in the graph's store")
    return store


class _MemoryMiddleware(AgentMiddleware):
    """Puts the framed pools into each model call (never into the state)."""

    def __init__(self, options: _Options, prompt: str, headers: Any) -> None:
        super().__init__()
        self.options, self.prompt, self.headers = options, prompt, headers

    @property
    def name(self) -> str:
        return "PoolsplitMemory"

    def _request(self, request: ModelRequest) -> ModelRequest:
        runtime = request.runtime
        store = None if runtime is None else runtime.store
        store = _needed(store, "create_agent(..., store=...)")
        space = _namespace(self.options.namespace, get_config())
        history, own, start = _split(request.messages)
        fill = _fill(store, space, self.options)
        results, read = fill("" if start is None else history[start].text)
        if request.system_message:
            own.insert(0, request.system_message.text)
        system, recalled = _memory_messages(
            _joined(self.prompt, *own), results, self.headers, read
        )
        at = len(history) if start is None else start
        messages = [*history[:at], *recalled, *history[at:]]
        return request.override(system_message=system, messages=messages)

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        return handler(self._request(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        # the read blocks (a PoolsplitStore, a sync search): in a worker thread
        return await handler(await asyncio.to_thread(self._request, request))


def memory_middleware(
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
    tz: str | None = None,
) -> AgentMiddleware:
    """Agent middleware for ``create_agent(..., middleware=[...], store=...)``:
    before each model call, the system message becomes ONE (``prompt``, the
    agent's, then the always-scope entries) and the recalled context is one
    ``HumanMessage`` before the latest human message. Sync and async."""
    options = _options(pools, namespace, ranking, now, tz)
    return _MemoryMiddleware(options, prompt, headers)


def memory_prompt(
    pools: Sequence[Pool] | None = None,
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    ranking: str = "lexical",
    tz: str | None = None,
) -> Callable[[Mapping[str, Any]], list[BaseMessage]]:
    """A ``prompt=`` callable for ``create_react_agent(..., store=store)``:
    :func:`with_memory`'s messages, recalled from ``get_store()``."""
    options = _options(pools, namespace, ranking, now, tz)

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
    tz: str | None = None,
) -> Callable[..., dict[str, list[Any]]]:
    """A node that calls ``model`` on :func:`with_memory`'s messages and adds
    only the reply to the state (compile the graph with ``store=``)."""
    options = _options(pools, namespace, ranking, now, tz)

    def call_model(
        state: Mapping[str, Any],
        *,
        config: RunnableConfig,
        store: Optional[BaseStore],  # noqa: UP045 - LangGraph reads this annotation
    ) -> dict[str, list[Any]]:
        space = _namespace(namespace, config)
        fill = _fill(_needed(store, "compile(store=...)"), space, options)
        got = _with_memory(state["messages"], fill, prompt, max_history_tokens, headers)
        return {"messages": [model.invoke(got, config)]}

    return call_model


def remember_tool(
    pools: Sequence[Pool] | None = None,
    *,
    namespace: Namespace = user_namespace,
    name: str = "remember",
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> BaseTool:
    """A tool the agent calls to write one memory (``build_entry``, then
    :func:`remember`) into its store; it answers ``{"id", "warnings"}``, an
    invalid memory is a tool error the model can correct, nothing written."""
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
            warnings = remember(store, space, entry, pools=admitted,
                                token_counter=token_counter,
                                max_entry_tokens=max_entry_tokens)  # fmt: skip
        except InvalidInput as exc:
            raise ToolException(str(exc)) from None
        return {"id": entry["id"], "warnings": warnings}

    return StructuredTool.from_function(
        write, name=name, description=REMEMBER_DESCRIPTION, handle_tool_error=True
    )
