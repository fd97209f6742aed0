"""LangChain and LangGraph: pooled memory in the agent's one system message.

Two traps of the obvious glue are avoided here. A second ``SystemMessage``
beside the agent's own is rejected by several providers, so the agent's
prompt and the rendered pools are merged into **one**. And LangGraph's
``BaseStore.search`` takes one ``limit`` per call, the single budget pools
replace, so the node reads the whole namespace and lets ``retrieve_pools``
do the budgeting.

    pip install -e '.[integrations]'    # langchain-core, langgraph (Python 3.11+)
    python examples/langchain_memory.py

The script runs a one-node graph on the demo store flooded with 200 urgent
tasks, with a fake chat model, and prints the system message it received.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, Union

# Run as a script from a checkout: poolsplit.py is one folder up; an installed
# poolsplit comes earlier on sys.path and wins.
sys.path.append(str(Path(__file__).resolve().parent.parent))

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
from langgraph.graph import MessagesState
from langgraph.store.base import BaseStore

from poolsplit import Pool, render, retrieve_pools

# Where the ids of the injected entries go on the merged SystemMessage.
METADATA_KEY = "poolsplit"
# Items read per BaseStore.search call while loading a whole namespace.
PAGE_SIZE = 1000


class MemoryNode(Protocol):
    """A LangGraph node that is given the run's config and the graph's store."""

    def __call__(
        self, state: MessagesState, *, config: RunnableConfig, store: BaseStore
    ) -> dict[str, list[AnyMessage]]: ...


Namespace = Union[tuple[str, ...], Callable[[RunnableConfig], tuple[str, ...]]]


def latest_human_text(messages: Iterable[BaseMessage]) -> str:
    """The text of the last ``HumanMessage``, or "" when there is none."""
    text = ""
    for message in messages:
        if isinstance(message, HumanMessage):
            text = message.text
    return text


def system_message(
    prompt: str,
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    headers: Mapping[str, str] | None = None,
) -> SystemMessage:
    """The agent's prompt, then the rendered pools, as ONE ``SystemMessage``.

    One, because several providers reject a second system message. The ids
    injected per pool are kept in ``additional_kwargs["poolsplit"]["pools"]``
    for logging and tests; the model reads only the text.
    """
    memory = render(results, headers=headers)
    text = "\n\n".join(part.rstrip("\n") for part in (prompt, memory) if part)
    pools = {name: [e.get("id") for e in chosen] for name, chosen in results.items()}
    return SystemMessage(
        content=text, additional_kwargs={METADATA_KEY: {"pools": pools}}
    )


def with_memory(
    messages: Sequence[BaseMessage],
    entries: Iterable[Any],
    pools: Sequence[Pool],
    *,
    prompt: str = "",
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> list[BaseMessage]:
    """The model's input: one merged system message, then the trimmed history.

    Pools are filled for the latest human message. System messages already in
    ``messages`` are merged after ``prompt`` instead of being sent again, and
    the rest is cut to its last ``max_history_tokens`` (approximate count)
    with ``trim_messages``, starting on a human message.
    """
    history = [m for m in messages if not isinstance(m, SystemMessage)]
    own = [m.text for m in messages if isinstance(m, SystemMessage)]
    context = {"message": latest_human_text(history)}
    results = retrieve_pools(entries, pools, context, now=now)
    system = system_message(
        "\n\n".join(p for p in (prompt, *own) if p), results, headers=headers
    )
    trimmed = trim_messages(
        history,
        max_tokens=max_history_tokens,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
    )
    return [system, *trimmed]


# --- LangGraph ----------------------------------------------------------------


def load_entries(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """Every item value under ``namespace``, page by page (no single ``limit``)."""
    entries: list[Any] = []
    offset = 0
    while True:
        page = store.search(namespace, limit=PAGE_SIZE, offset=offset)
        entries.extend(item.value for item in page)
        if len(page) < PAGE_SIZE:
            return entries
        offset += PAGE_SIZE


def remember(
    store: BaseStore, namespace: tuple[str, ...], entry: dict[str, Any]
) -> None:
    """Store one entry as the item's value, keyed by its ``id`` (required)."""
    if entry.get("id") is None:
        raise ValueError("entry has no 'id': the BaseStore item key is the entry id")
    store.put(namespace, str(entry["id"]), entry)


def user_namespace(config: RunnableConfig) -> tuple[str, ...]:
    """``("memories", user_id)`` from ``config["configurable"]["user_id"]``."""
    user = config.get("configurable", {}).get("user_id")
    if not isinstance(user, str) or not user:
        raise ValueError(
            "config['configurable']['user_id'] must be a non-empty str, "
            f"got {user!r}: it names the user's memory namespace"
        )
    return ("memories", user)


def memory_node(
    model: BaseChatModel,
    pools: Sequence[Pool],
    *,
    prompt: str = "",
    namespace: Namespace = user_namespace,
    max_history_tokens: int = 2000,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> MemoryNode:
    """A LangGraph node that calls ``model`` with pooled memory injected.

    It reads the namespace's entries from the graph's store (compile with
    ``store=``), fills ``pools`` for the latest human message and invokes the
    model on :func:`with_memory`'s messages. Only the reply is added to the
    state: the memory is rebuilt every turn, never stored in the history.
    ``namespace`` is a tuple, or a function of the run's config (default:
    one namespace per ``user_id``).
    """

    def call_model(
        state: MessagesState, *, config: RunnableConfig, store: BaseStore
    ) -> dict[str, list[AnyMessage]]:
        if store is None:
            raise ValueError("compile the graph with store=...: entries live there")
        space = namespace(config) if callable(namespace) else namespace
        messages = with_memory(
            state["messages"],
            load_entries(store, space),
            pools,
            prompt=prompt,
            max_history_tokens=max_history_tokens,
            headers=headers,
            now=now,
        )
        return {"messages": [model.invoke(messages, config)]}

    return call_model


def main() -> int:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import (
        FakeMessagesListChatModel,
    )
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, StateGraph
    from langgraph.store.memory import InMemoryStore

    from poolsplit import DEMO_NOW, demo_pools, demo_store

    class Recorder(BaseCallbackHandler):
        """Keeps the messages of every chat model call."""

        def __init__(self) -> None:
            self.calls: list[list[BaseMessage]] = []

        def on_chat_model_start(
            self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any
        ) -> None:
            self.calls.extend(messages)

    store = InMemoryStore()
    for entry in demo_store(flood=200):
        remember(store, ("memories", "ada"), entry)
    model = FakeMessagesListChatModel(responses=[AIMessage("On it.")])
    node = memory_node(
        model, demo_pools(), prompt="You are a careful agent.", now=DEMO_NOW
    )
    graph = StateGraph(MessagesState).add_node("model", node)
    app = graph.add_edge(START, "model").compile(store=store)
    recorder = Recorder()
    config: RunnableConfig = {
        "configurable": {"user_id": "ada"},
        "callbacks": [recorder],
    }
    app.invoke({"messages": [HumanMessage("How do I debug the billing work?")]}, config)
    system = recorder.calls[-1][0]
    print(system.text)
    print("injected:", system.additional_kwargs[METADATA_KEY]["pools"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
