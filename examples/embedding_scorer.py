"""An embedding scorer: semantic similarity times poolsplit's default factors.

The default scorer multiplies priority, recency, tags, project and a lexical
message-overlap boost. This scorer keeps the first four by calling
``default_scorer`` on the context without its message, and replaces the
lexical boost with ``1 + weight * max(0, cosine(message, content))``.

The message is embedded once per call (per distinct message, cached) and each
distinct content once (a bounded LRU keyed by content), so a turn over a
warm store costs one embedding plus dictionary look-ups.

    pip install -e . wordllama   # in a checkout (or: pip install poolsplit wordllama)
    python examples/embedding_scorer.py

``WordLlama.load(cache_dir=<package folder>, disable_download=True)`` reads the
weights and tokenizer shipped in the wheel: nothing is downloaded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from poolsplit import (
    DEMO_NOW,
    Pool,
    default_scorer,
    demo_pools,
    demo_store,
    retrieve_pools,
)

Vector = Sequence[float]
Embed = Callable[[list[str]], list[Vector]]


def wordllama_embed() -> Embed:
    """Load wordllama from its own package folder and return a batch embedder."""
    import wordllama
    from wordllama import WordLlama

    model = WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )

    def embed(texts: list[str]) -> list[Vector]:
        # norm=True: unit vectors, so the dot product is the cosine.
        return [row.tolist() for row in model.embed(texts, norm=True)]

    return embed


class EmbeddingScorer:
    """A scorer: ``default_scorer`` without its message term, times similarity.

    ``weight`` scales the semantic boost; a similarity at or below 0 adds
    nothing, so unrelated entries keep exactly their default factors.
    ``cache_size`` bounds the content cache (least recently used is dropped).
    ``embed`` must return unit vectors, one per text.
    """

    def __init__(self, embed: Embed, *, weight: float = 2.0, cache_size: int = 4096):
        self.embed = embed
        self.weight = weight
        self.cache_size = cache_size
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._message: tuple[str, Vector] | None = None
        self.embedded = 0  # texts sent to the model, for tests and reports

    def _vector(self, text: str) -> Vector:
        vectors = self._vectors
        vector = vectors.get(text)
        if vector is None:
            vector = vectors[text] = self.embed([text])[0]
            self.embedded += 1
            if len(vectors) > self.cache_size:
                vectors.popitem(last=False)
        else:
            vectors.move_to_end(text)
        return vector

    def warm(self, entries: Iterable[Mapping[str, Any]]) -> int:
        """Embed the contents not yet cached in one batch call; returns how many.

        Optional: a cold scorer embeds each content on first use, one model
        call per text. Batching a new store up front is much cheaper with a
        transformer (sentence_transformer_scorer.py).
        """
        vectors = self._vectors
        texts = (e.get("content") for e in entries)
        new = list(
            dict.fromkeys(
                text
                for text in ("" if t is None else str(t) for t in texts)
                if text not in vectors
            )
        )
        if new:
            for text, vector in zip(new, self.embed(new)):
                vectors[text] = vector
            self.embedded += len(new)
            while len(vectors) > self.cache_size:
                vectors.popitem(last=False)
        return len(new)

    def similarity(self, message: str, content: str) -> float:
        if self._message is None or self._message[0] != message:
            # Once per distinct message, i.e. once per retrieve_pools call.
            self._message = (message, self.embed([message])[0])
            self.embedded += 1
        query = self._message[1]
        return float(sum(a * b for a, b in zip(query, self._vector(content))))

    def __call__(
        self,
        entry: Mapping[str, Any],
        context: Mapping[str, Any] | None,
        /,
        *,
        now: datetime,
    ) -> float:
        context = context or {}
        message = context.get("message") or ""
        rest = {k: v for k, v in context.items() if k != "message"}
        score = default_scorer(entry, rest, now=now)
        if not message:
            return score
        content = entry.get("content")
        similarity = self.similarity(message, "" if content is None else str(content))
        return score * (1.0 + self.weight * max(0.0, similarity))


def moved(
    store: list[dict[str, Any]],
    pools: list[Pool],
    context: Mapping[str, Any],
    scorer: EmbeddingScorer,
) -> dict[str, tuple[list[str], list[str]]]:
    """Per pool, the ids only the lexical scorer took and those only embeddings took."""
    lexical = retrieve_pools(store, pools, context, now=DEMO_NOW)
    semantic = retrieve_pools(store, pools, context, scorer=scorer, now=DEMO_NOW)
    out = {}
    for pool in pools:
        a = [e["id"] for e in lexical[pool.name]]
        b = [e["id"] for e in semantic[pool.name]]
        out[pool.name] = ([i for i in a if i not in b], [i for i in b if i not in a])
    return out


QUERIES = (
    # No shared words with the stored text: the lexical boost cannot fire.
    {"message": "the invoice numbers look wrong after the upgrade", "tags": []},
    {"message": "production went down, how do I undo the release?", "tags": []},
    {"message": "which database does the search backend use?", "tags": ["search"]},
)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Embedding scorer for poolsplit.")
    parser.add_argument("--flood", type=int, default=0, help="urgent tasks to add")
    args = parser.parse_args(argv)

    store = demo_store(args.flood)
    by_id = {e["id"]: e for e in store}
    pools = demo_pools()
    scorer = EmbeddingScorer(wordllama_embed())
    start = time.perf_counter()
    count = scorer.warm(store)
    print(
        f"embedded {count} distinct contents of {len(store)} entries in one batch: "
        f"{(time.perf_counter() - start) * 1e3:.1f} ms"
    )
    for context in QUERIES:
        print(f"== {context['message']!r}")
        start = time.perf_counter()
        changes = moved(store, pools, context, scorer)
        print(
            f"   (lexical + embedding turn: "
            f"{(time.perf_counter() - start) * 1e3:.1f} ms, "
            f"{scorer.embedded} texts embedded so far)"
        )
        for pool, (out_ids, in_ids) in changes.items():
            for tag, ids in (("-", out_ids), ("+", in_ids)):
                for i in ids:
                    print(f"   {pool:8} {tag} {i:12} {by_id[i]['content']}")
    start = time.perf_counter()
    retrieve_pools(store, pools, QUERIES[0], scorer=scorer, now=DEMO_NOW)
    print(
        f"\nwarm turn with embeddings: {(time.perf_counter() - start) * 1e3:.1f} ms "
        f"({len(store)} entries, {scorer.embedded} texts embedded in total)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
