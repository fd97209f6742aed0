"""LlamaIndex: a memory block on a poolsplit store that never loses a correction.

    pip install 'poolsplit-memory[llamaindex]'

>>> from llama_index.core.memory import Memory                  # doctest: +SKIP
>>> from poolsplit_memory import open_store
>>> from poolsplit_memory.llamaindex import PoolsplitMemoryBlock
>>> block = PoolsplitMemoryBlock(store=open_store("memory.db"), priority=1)
>>> memory = Memory.from_defaults(memory_blocks=[block])        # doctest: +SKIP

``PoolsplitMemoryBlock`` is a ``BaseMemoryBlock``: ``Memory`` asks it for
its text before each model call (``_aget``: the pools filled for the latest
user message, rendered), hands it the turns it flushes out of its short-term
queue (``_aput``: each turn written into the store as an ``episode`` entry,
so a new block, a new process, on the same store sees them) and asks it to
shrink under pressure (``atruncate``).

Where the text goes. ``Memory`` puts every block's text in one place, its
``insert_method``: the system message by default (``InsertMethod.SYSTEM``),
or the latest user message (``InsertMethod.USER``), inside its
``<memory><poolsplit>`` template. That is LlamaIndex's place for standing
instructions and for retrieved context alike (its ``ContextChatEngine``
puts retrieved nodes in the system prompt too), so the block keeps the
recall whole there and follows ``Memory``'s setting: the always-scope
entries and the rest, each pool under its heading, in the frame of
``poolsplit_memory._frame`` (stored data, not instructions). A block cannot
place its parts apart without reaching into ``Memory``'s private state.

Priority and truncation. ``Memory`` never truncates a block at
``priority=0``; others it truncates in priority order, and which end goes
first has changed between versions (run-llama/llama_index#23090: 0.14.25
truncates ``priority=1`` before ``2``, the opposite of the documented
meaning). This block does not depend on that order: its ``atruncate`` drops
context entries one at a time, the lowest-ranked entry of the pool holding
the most first (so every pool stays represented as long as possible), and
never an always-scope entry. ``Memory``'s last resort, removing whole blocks,
runs only when the history plus the always-scope entries alone pass
``token_limit``; ``atruncate`` warns when it cannot save what was asked, so
that case is never silent. Give the block room (``Memory`` keeps the history
under ``chat_history_token_ratio`` of ``token_limit``), or use ``priority=0``.
"""

from __future__ import annotations

import asyncio
import io
import json
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, Optional

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
    from llama_index.core.memory import BaseMemoryBlock
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"poolsplit_memory.llamaindex needs llama-index-core ({exc.name} is "
        "missing): pip install 'poolsplit-memory[llamaindex]' (Python 3.11+)"
    ) from exc

from poolsplit import (
    Pool,
    PoolsplitWarning,
    default_token_counter,
    is_always,
)

from poolsplit_memory import InvalidInput, Store, build_entry
from poolsplit_memory._frame import frame, not_loaded

__all__ = ["EPISODE_TYPE", "PoolsplitMemoryBlock"]

EPISODE_TYPE: Final = "episode"
"""The entry type of the turns ``Memory`` flushes into the block."""

Results = dict[str, list[dict[str, Any]]]


def _text(message: ChatMessage) -> str:
    """A message's text (its text blocks joined; "" when it has none)."""
    content = message.content
    return content if isinstance(content, str) else ""


class PoolsplitMemoryBlock(BaseMemoryBlock[str]):
    """Pooled recall from a ``poolsplit_memory`` store for the latest user message.

    ``store`` is a store of :func:`poolsplit_memory.open_store`. ``pools``
    None (the default) recalls with the store's own pools, through
    ``store.recall`` (its cache, its report of unreadable rows): the pools
    given to ``open_store(url, pools=...)``, else the package's neutral
    ``DEFAULT_POOLS`` (one pool per common type and a spill-over pool for
    the rest; never the demo's). ``pools`` given fills those instead
    (``store.recall(..., pools=...)``: the same cache and rule).
    ``token_counter`` should count as the ``Memory``'s ``tokenizer_fn``
    does, so that ``atruncate`` saves what ``Memory`` asked for. ``now``
    fixes the clock of recall and of the episodes' ``created`` (tests);
    None reads the wall clock.
    """

    name: str = "poolsplit"
    store: Store = Field(description="The poolsplit_memory store (open_store).")
    pools: Optional[list[Pool]] = Field(default=None)  # noqa: UP045
    headers: Optional[dict[str, str]] = None  # noqa: UP045 - pydantic reads it at runtime
    token_counter: Callable[[str], int] = Field(default=default_token_counter)
    now: Optional[datetime] = None  # noqa: UP045
    _rendered: dict[str, tuple[Results, str, Optional[str]]] = PrivateAttr(  # noqa: UP045
        default_factory=dict
    )

    @field_validator("store", mode="before")
    @classmethod
    def _a_store(cls, value: object) -> object:
        if not isinstance(value, Store):
            raise TypeError(
                "store must be a poolsplit_memory store (open_store(...)), "
                f"got {type(value).__name__}"
            )
        return value

    @field_validator("pools", mode="before")
    @classmethod
    def _pools(cls, value: object) -> object:
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"pools must be a list of Pool, got {type(value).__name__}")
        for position, pool in enumerate(value):
            if not isinstance(pool, Pool):
                raise TypeError(
                    f"pools[{position}] must be a Pool, got {type(pool).__name__}"
                )
        return list(value)

    async def _aget(
        self, messages: list[ChatMessage] | None = None, **block_kwargs: Any
    ) -> str:
        """The framed pools for the latest user message in ``messages``.

        The text is the frame of ``poolsplit_memory._frame`` (stored data,
        not instructions; no content can forge a line, nor the ``</memory>``
        closing tag ``Memory``'s template puts at column 0). A stored row
        that fails validation is left out by the store and, when it is
        always-scope, named in the text, so the model knows a correction
        could not be loaded.
        """
        message = ""
        for chat in messages or ():
            if chat.role == MessageRole.USER:
                message = _text(chat)
        results, missing, caller = await asyncio.to_thread(self._recall, message)
        text = self._framed(results, missing, caller)
        self._rendered = {text: (results, missing, caller)}  # what atruncate cuts
        return text

    def _recall(self, message: str) -> tuple[Results, str, str | None]:
        """The pools for ``message``, the section naming unloadable
        corrections, and the reader (``Recall.caller``).

        Always ``store.recall`` (with the block's pools when given), so the
        store's warm cache applies and its one rule decides what loads.
        """
        recall = self.store.recall(message, now=self.now, pools=self.pools)
        results = {name: list(chosen) for name, chosen in recall.pools.items()}
        return results, not_loaded(recall.always_skipped), recall.caller

    def _framed(self, results: Results, missing: str, caller: str | None) -> str:
        text = frame(results, caller=caller, headers=self.headers)
        return text + missing if text else missing.lstrip("\n")

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Write each flushed turn (a user message and its replies) as an episode.

        The episodes go into the store, so they outlive the process and any
        block over the same store (and namespace) recalls them. A turn too
        long for one entry (the store's ``max_entry_tokens`` by its
        ``token_counter``) is written as consecutive parts, never cut: split
        at the last whitespace that fits, or at any character when a part
        has none (CJK text, one long word). Every episode of the call is
        written in one transaction (``import_jsonl``): all or none.
        """
        turns: list[list[ChatMessage]] = []
        for chat in messages:
            if chat.role == MessageRole.USER or not turns:
                turns.append([])
            turns[-1].append(chat)
        entries = [
            build_entry(part, type=EPISODE_TYPE, now=self.now)
            for turn in turns
            for part in self._parts(
                "\n".join(f"{chat.role.value}: {_text(chat)}" for chat in turn)
            )
        ]
        if entries:
            lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
            await asyncio.to_thread(self.store.import_jsonl, io.StringIO(lines))

    def _parts(self, content: str) -> list[str]:
        """``content`` in consecutive parts of at most the store's entry size.

        Each part is the longest prefix that fits (binary search on the
        store's counter), cut back to its last whitespace when it has one;
        blank parts are dropped (they carry nothing).

        Raises:
            InvalidInput: one character alone passes ``max_entry_tokens``.
        """
        count, limit = self.store.token_counter, self.store.max_entry_tokens
        parts: list[str] = []
        rest = content
        while rest.strip():
            if count(rest) <= limit:
                parts.append(rest)
                break
            low, high = 0, len(rest)  # rest[:low] fits, rest[:high] does not
            while high - low > 1:
                middle = (low + high) // 2
                if count(rest[:middle]) <= limit:
                    low = middle
                else:
                    high = middle
            if low == 0:
                raise InvalidInput(
                    "content",
                    f"one character is over max_entry_tokens ({limit}) "
                    "by the store's token_counter",
                )
            space = max(rest.rfind(" ", 0, low), rest.rfind("\n", 0, low))
            cut = space + 1 if space > 0 else low
            parts.append(rest[:cut])
            rest = rest[cut:]
        return [part for part in parts if part.strip()]

    # BaseMemoryBlock[str] declares str in and out, but Memory also hands over
    # lists (see below), and another block's list must come back as it was.
    async def atruncate(  # type: ignore[override]
        self, content: str | list[Any], tokens_to_truncate: int
    ) -> str | list[Any] | None:
        """Drop context entries, lowest-ranked first; keep every always-scope one.

        Entries are removed one at a time from the pool that holds the most
        context entries (its last, lowest-ranked one; ties: the later pool),
        until the text is ``tokens_to_truncate`` shorter or only always-scope
        entries remain. Returns None (nothing to show) only when no
        always-scope entry was in ``content``.

        ``content`` is whatever ``Memory`` hands over (llama-index-core 0.14,
        ``Memory._truncate_memory_blocks``): this block's text from
        :meth:`_aget`; ``[]`` when that text was empty (``Memory`` keeps no
        entry for an empty block and passes its default); or, when another
        block has the same ``name`` (``Memory`` keys the contents by name),
        that block's str or list. Empty content returns None (nothing to
        cut). Anything but the text this block rendered last is returned
        unchanged: nothing in it is known to be safe to cut.

        Warns:
            PoolsplitWarning: the always-scope entries alone are longer than
                what ``Memory`` leaves, so ``Memory`` may remove whole blocks.
        """
        if not content:
            return None
        if not isinstance(content, str) or content not in self._rendered:
            return content
        results, missing, caller = self._rendered[content]
        kept = {name: list(chosen) for name, chosen in results.items()}
        context = {
            name: [e for e in chosen if not is_always(e)]
            for name, chosen in kept.items()
        }
        target = self.token_counter(content) - tokens_to_truncate
        text = content
        while self.token_counter(text) > target and any(context.values()):
            name = max(reversed(list(context)), key=lambda n: len(context[n]))
            kept[name].remove(context[name].pop())
            text = self._framed(kept, missing, caller)
        need = self.token_counter(text)
        if need > target:
            warnings.warn(
                PoolsplitWarning(
                    f"memory block {self.name!r}: the always-scope entries need "
                    f"{need} tokens, {need - target} more than Memory leaves "
                    "them, so Memory may remove whole blocks; raise token_limit "
                    "or use priority=0"
                ),
                stacklevel=2,
            )
        return text or None
