"""LlamaIndex: a memory block that never loses an always-scope entry.

``llama_index.core.memory.Memory`` truncates its memory blocks when they and
the chat history pass ``token_limit``, and ``BaseMemoryBlock``'s default
``atruncate`` drops the whole block: a pooled block at ``priority=1`` lost its
corrections exactly under pressure. ``PoolsplitMemoryBlock`` truncates by
entries instead.

Priority semantics (``Memory`` reads ``priority`` as: 0 never truncated,
otherwise truncated lowest number first):

- ``priority=0``: every pooled entry is always shown, context entries too.
- ``priority>=1``: under pressure, ``atruncate`` drops context entries one at
  a time, the lowest-ranked entry of the pool holding the most first (so
  every pool stays represented as long as possible), until the requested
  tokens are saved; every always-scope entry is kept. ``Memory``'s last
  resort, removing whole blocks, runs only when the history plus the
  always-scope entries alone pass ``token_limit``; give the block room for
  them (``Memory`` keeps the history under ``chat_history_token_ratio``).

``_aput`` receives the chat turns ``Memory`` flushes out of its short-term
queue and appends them to ``entries`` as ``episode`` entries.

    pip install -e '.[integrations]'    # llama-index-core (Python 3.10+)
    python examples/llamaindex_memory.py
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# Run as a script from a checkout: poolsplit.py is one folder up; an installed
# poolsplit comes earlier on sys.path and wins.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr, SkipValidation

from poolsplit import (
    Pool,
    default_token_counter,
    demo_pools,
    render,
    retrieve_pools,
)

Results = dict[str, list[Any]]


def _text(message: ChatMessage) -> str:
    return message.content if isinstance(message.content, str) else ""


class PoolsplitMemoryBlock(BaseMemoryBlock[str]):
    """Pooled retrieval over ``entries`` for the latest user message.

    ``entries`` is kept by identity (the list you pass is the one read and
    appended to). ``token_counter`` should count as the ``Memory``'s
    ``tokenizer_fn`` does, so ``atruncate`` saves what ``Memory`` asked for.
    """

    name: str = "poolsplit"
    entries: SkipValidation[list[Any]] = Field(default_factory=list)
    pools: SkipValidation[list[Pool]] = Field(default_factory=demo_pools)
    headers: dict[str, str] | None = None
    token_counter: SkipValidation[Callable[[str], int]] = default_token_counter
    now: datetime | None = None
    _rendered: dict[str, Results] = PrivateAttr(default_factory=dict)

    async def _aget(
        self, messages: list[ChatMessage] | None = None, **block_kwargs: Any
    ) -> str:
        """The rendered pools for the latest user message in ``messages``."""
        message = ""
        for chat in messages or ():
            if chat.role == MessageRole.USER:
                message = _text(chat)
        results = retrieve_pools(
            self.entries, self.pools, {"message": message}, now=self.now
        )
        text = render(results, headers=self.headers)
        self._rendered = {text: results}  # what atruncate cuts from
        return text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Append each flushed turn (a user message and its replies) as an episode."""
        turns: list[list[ChatMessage]] = []
        for chat in messages:
            if chat.role == MessageRole.USER or not turns:
                turns.append([])
            turns[-1].append(chat)
        created = (self.now or datetime.now(timezone.utc)).isoformat()
        for turn in turns:
            content = "\n".join(f"{chat.role.value}: {_text(chat)}" for chat in turn)
            self.entries.append(
                {
                    "id": f"episode-{uuid.uuid4().hex[:12]}",
                    "type": "episode",
                    "content": content,
                    "created": created,
                }
            )

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop context entries, lowest-ranked first; keep every always-scope one.

        Entries are removed one at a time from the pool that holds the most
        context entries (its last, lowest-ranked one), until the rendered text
        is ``tokens_to_truncate`` shorter or only always-scope entries remain.
        Returns None (nothing to show) only when no always-scope entry was in
        ``content``.
        """
        results = self._rendered.get(content)
        if results is None:  # not our last render: nothing known to cut safely
            return content
        kept = {name: list(chosen) for name, chosen in results.items()}
        context = {
            name: [e for e in chosen if _is_context(e)] for name, chosen in kept.items()
        }
        target = self.token_counter(content) - tokens_to_truncate
        text = content
        while self.token_counter(text) > target and any(context.values()):
            name = max(reversed(list(context)), key=lambda n: len(context[n]))
            kept[name].remove(context[name].pop())
            text = render(kept, headers=self.headers)
        return text or None


def _is_context(entry: Mapping[str, Any]) -> bool:
    return entry.get("scope") != "always"


def main() -> int:
    import asyncio

    from llama_index.core.memory import Memory
    from sqlalchemy.ext.asyncio import create_async_engine

    from poolsplit import DEMO_NOW, demo_store

    async def run() -> Sequence[ChatMessage]:
        engine = create_async_engine("sqlite+aiosqlite:///:memory:")
        block = PoolsplitMemoryBlock(
            entries=demo_store(flood=200),
            priority=1,
            now=DEMO_NOW,
            token_counter=lambda text: len(text.split()),
        )
        memory = Memory.from_defaults(
            session_id="demo",
            token_limit=150,  # small: forces atruncate
            memory_blocks=[block],
            tokenizer_fn=str.split,  # offline: the default would fetch tiktoken's
            async_engine=engine,  # ours, so it is closed
        )
        try:
            await memory.aput(
                ChatMessage(role="user", content="Fix the billing export")
            )
            return await memory.aget()
        finally:
            await engine.dispose()

    messages = asyncio.run(run())
    for message in messages:
        print(f"[{message.role.value}]")
        print(message.content)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
