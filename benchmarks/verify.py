"""Check that naive.retrieve_pools equals poolsplit.retrieve_pools (ids per pool)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import generate
import naive

import poolsplit


def main() -> int:
    bad = 0
    # 3,000 entries are sorted whole; 20,000 are past the size where the
    # ranking sorts only a sample's best eighth.
    for seed, size, turns in ((1, 3000, 4), (2, 3000, 4), (3, 3000, 4), (6, 20000, 3)):
        store = generate.make_store(size, seed=seed)
        for ctx in generate.make_contexts(turns, seed=seed + 10) + [{}]:
            pools = generate.make_pools()
            fast = poolsplit.retrieve_pools(store, pools, ctx, now=generate.NOW)
            slow = naive.retrieve_pools(store, pools, ctx, generate.NOW)
            for name in fast:
                a = [e["id"] for e in fast[name]]
                b = [e["id"] for e in slow[name]]
                if a != b:
                    bad += 1
                    print("MISMATCH seed", seed, name, a, b)
    print("equivalence:", "OK" if not bad else f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
