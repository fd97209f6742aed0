"""Check that naive.retrieve_pools equals poolsplit.retrieve_pools (ids per pool)."""

from __future__ import annotations

import os
import random
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import generate
import naive

import poolsplit


def main() -> int:
    bad = 0
    # 3,000 entries are sorted whole; 20,000 are past the size where the
    # ranking sorts only a sample's best eighth. Every shape: the tied ones
    # (uniform, aged, flat) are decided by created, id and input position.
    plan = [(1, 3000, 4), (2, 3000, 4), (3, 3000, 4), (6, 20000, 3)]
    for shape in generate.SHAPES:
        bad += check_shape(shape, plan)
    print("equivalence:", "OK" if not bad else f"{bad} mismatches")
    return 1 if bad else 0


def three_words(turns: int, seed: int) -> list[dict[str, Any]]:
    """Contexts of a three-word message alone: one shared word boosts an entry."""
    rng = random.Random(seed)
    vocab = generate.vocabulary(seed=1)
    return [{"message": " ".join(rng.choices(vocab, k=3))} for _ in range(turns)]


def check_shape(shape: str, plan: list[tuple[int, int, int]]) -> int:
    """Mismatches between the two on stores of ``shape``, printing each."""
    bad = 0
    for seed, size, turns in plan:
        store = generate.make_store(size, seed=seed, shape=shape)
        contexts = generate.make_contexts(turns, seed=seed + 10)
        contexts += three_words(turns, seed=seed + 20) + [{}]
        for ctx in contexts:
            pools = generate.make_pools()
            fast = poolsplit.retrieve_pools(store, pools, ctx, now=generate.NOW)
            slow = naive.retrieve_pools(store, pools, ctx, generate.NOW)
            for name in fast:
                a = [e["id"] for e in fast[name]]
                b = [e["id"] for e in slow[name]]
                if a != b:
                    bad += 1
                    print("MISMATCH", shape, "seed", seed, name, a, b)
    print(f"{shape}: {'OK' if not bad else f'{bad} mismatches'}")
    return bad


if __name__ == "__main__":
    raise SystemExit(main())
