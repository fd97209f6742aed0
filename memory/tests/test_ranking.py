"""The lexical ranking (_ranking.py) against memory/README.md's "Ranking".

The oracle below is written from the README's formula and imports nothing
of the ranking: its words are the README's rule (a regex and the core's
stopword list), its stems Snowball's own Porter stemmer, its statistics
counted from scratch.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from datetime import datetime, timezone

import poolsplit
import pytest
import snowballstemmer
from hypothesis import example, given, settings
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import _ranking, _subset
from poolsplit_memory._ranking import (
    Statistics,
    floored,
    recall_by_scores,
    stem,
    terms,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
_PORTER = snowballstemmer.stemmer("porter")
# Each word stemmed once per run: the oracles recompute every entry's terms
# per call (four minutes of Snowball in test_langgraph's turn checks).
_stem = functools.lru_cache(maxsize=None)(_PORTER.stemWord)


# --- the oracle, from the README ---------------------------------------------


def oracle_terms(text):
    words = set(re.findall(r"[a-z0-9]{3,}", text.lower())) - poolsplit.STOPWORDS
    return {_stem(w) for w in words}


def oracle_text(entry):
    """The content the core reads: missing or None is "", else its str()."""
    content = entry.get("content")
    return "" if content is None else str(content)


def oracle_r(entries, entry, message):
    docs = [oracle_terms(oracle_text(e)) for e in entries]
    n_docs = len(docs)
    average = sum(len(d) for d in docs) / n_docs if n_docs else 0.0

    def idf(term):
        n = sum(1 for d in docs if term in d)
        return math.log(1 + (n_docs - n + 0.5) / (n + 0.5))

    known = [t for t in oracle_terms(message or "") if any(t in d for d in docs)]
    own = oracle_terms(oracle_text(entry))
    shared = sum(idf(t) for t in known if t in own)
    if not shared:
        return 0.0
    length = 2.2 / (1 + 1.2 * (0.25 + 0.75 * len(own) / average))
    return shared * (length + 1) / (sum(idf(t) for t in known) * 3.2)


def oracle_factor(r, best):
    """g(r, best), as the README states it."""
    if best == 0:
        return 1.0
    if r == 0 or r < 0.2 * best:
        return 0.0
    return math.exp(30 * r)


def oracle_score(entries, entry, context):
    """(score, r, factor) of ``entry`` over the namespace ``entries``."""
    message = context.get("message")
    r = oracle_r(entries, entry, message)
    best = max((oracle_r(entries, e, message) for e in entries), default=0.0)
    base_context = {k: v for k, v in context.items() if k != "message"}
    based = entry
    if context.get("project") is None:  # no project named: none is held against
        based = {k: v for k, v in entry.items() if k != "project"}
    base = poolsplit.default_scorer(based, base_context, now=NOW)
    factor = oracle_factor(r, best)
    # g = 0: not loaded, a score of 0 even for a base that overflowed
    return (base * factor if factor else 0.0), r, factor


# --- strategies ----------------------------------------------------------------

VOCABULARY = [
    "paint", "paints", "painted", "painting", "sunset", "sunsets", "run",
    "running", "runs", "marathon", "relational", "relate", "conditional",
    "caress", "ponies", "happy", "happiness", "adoption", "agency", "the",
    "with", "Caroline", "Melanie", "42", "co", "it",
]  # fmt: skip
text = st.lists(st.sampled_from(VOCABULARY), max_size=8).map(" ".join)
entry = st.fixed_dictionaries(
    {"content": text, "type": st.sampled_from(["note", "fact", "task"])},
    optional={
        "scope": st.just("always"),
        "tags": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
        "base_priority": st.one_of(st.integers(-2, 10), st.floats(0, 10)),
        "project": st.sampled_from(["p", "q"]),
        "created": st.sampled_from(
            ["2026-05-30", "2026-01-01T10:00:00Z", "2024-02-02", "2027-01-01"]
        ),
    },
)
contexts = st.fixed_dictionaries(
    {
        "message": text,
        "tags": st.lists(st.sampled_from(["a", "b"]), max_size=2),
        "project": st.sampled_from([None, "p"]),
    }
)


# --- the formula ---------------------------------------------------------------


@given(entries=st.lists(entry, min_size=1, max_size=12), context=contexts)
@example(entries=[{"content": "", "type": "note"}], context={"message": "paint"})
def test_property_the_scorer_is_the_readme_formula(entries, context):
    stats = Statistics(entries)
    scorer = stats.scorer(context)
    relevance = stats.relevance(context["message"])
    for e in entries:
        expected, r, factor = oracle_score(entries, e, context)
        assert math.isclose(scorer(e, context, now=NOW), expected, rel_tol=1e-12)
        assert math.isclose(relevance.share(e), r, rel_tol=1e-12, abs_tol=0.0)
        assert math.isclose(relevance.factor(e), factor, rel_tol=1e-12)


@given(entries=st.lists(entry, min_size=1, max_size=12), context=contexts)
def test_property_an_entry_sharing_no_term_gets_its_base_or_nothing(entries, context):
    """1 x its base when no entry matches the message, else 0 (the floor)."""
    stats = Statistics(entries)
    relevance = stats.relevance(context["message"])
    matched = any(terms(e["content"]) & relevance.weights.keys() for e in entries)
    for e in entries:
        if not terms(e["content"]) & terms(context["message"]):
            assert relevance.factor(e) == (0.0 if matched else 1.0)


def test_an_entry_not_counted_is_scored_by_the_same_formula():
    counted = [{"content": "Ada paints sunsets"}, {"content": "Bob runs"}]
    stranger = {"content": "painting the sunset"}
    context = {"message": "paint a sunset"}
    expected, _, _ = oracle_score(counted, stranger, context)
    scorer = Statistics(counted).scorer(context)
    assert math.isclose(scorer(stranger, context, now=NOW), expected, rel_tol=1e-12)


def test_a_message_with_no_known_term_leaves_every_score_at_its_base():
    stats = Statistics([{"content": "Ada paints"}])
    assert stats.relevance("zebra quantum").factor({"content": "Ada paints"}) == 1.0
    assert stats.relevance("").factor({"content": "Ada paints"}) == 1.0
    assert Statistics().relevance("paint").factor({"content": "paint"}) == 1.0


def test_a_rarer_shared_term_weighs_more():
    entries = [{"content": f"note {i} about billing"} for i in range(9)]
    entries.append({"content": "refund policy"})
    relevance = Statistics(entries).relevance("billing refund")
    assert relevance.share(entries[-1]) > relevance.share(entries[0]) > 0.0
    # billing's share is under a fifth of refund's: below the floor
    assert relevance.factor(entries[-1]) > 1.0 and relevance.factor(entries[0]) == 0


def test_a_content_sharing_several_terms_is_bounded_by_its_rarest_terms_stream():
    """Relevance.bounds: each content belongs to the stream of the shared
    term the fewest contents hold, so the one entry sharing every term does
    not raise the bound of the many sharing one."""
    entries = [
        {"content": "billing deploy"},
        *({"content": f"deploy {word}"} for word in ("search", "report", "fix")),
        {"content": "billing invoice"},
    ]
    relevance = Statistics(entries).relevance("billing deploy")
    both = relevance.factor(entries[0])
    one = max(relevance.factor(e) for e in entries[1:4])
    bounds = relevance.bounds()
    assert bounds.keys() == {("bill", 2), ("deploi", 2)}  # stems
    assert bounds[("bill", 2)] == both
    # deploy, commoner, is not visited (no content holding only it can beat
    # "billing deploy"): its stream is bounded by its idf, at least its factor
    assert one <= bounds[("deploi", 2)] < both


def test_a_streams_bound_is_the_largest_factor_of_the_contents_it_owns():
    """Relevance.bounds: the stream (bill, 2) owns "billing invoice" (added
    first: the head of its postings, sharing one term) and "billing deploy"
    (sharing both, a larger factor); its bound is the larger, not the
    first met, or the walk would take an entry bounded below its score."""
    entries = [
        {"content": "billing invoice"},
        *({"content": f"deploy {word}"} for word in ("search", "report", "fix")),
        {"content": "billing deploy"},
    ]
    stats = Statistics(entries)
    relevance = stats.relevance("billing deploy")
    assert list(stats._postings["bill"]) == ["billing invoice", "billing deploy"]
    first, larger = relevance.factor(entries[0]), relevance.factor(entries[-1])
    assert 0.0 < first < larger
    assert relevance.bounds()[("bill", 2)] == larger
    assert relevance.bounds()[("deploi", 2)] >= relevance.factor(entries[1])


# --- the message weighed rarest term first (issue 35) -------------------------

# A chat's words: a few in most entries, most in few.
CHAT = ["work"] * 8 + ["weekend"] * 4 + ["dinner"] * 2 + ["gift", "piano", "dad"]
chat_text = st.lists(st.sampled_from(CHAT), min_size=1, max_size=6).map(" ".join)


def plain_shares(entries, message):
    """Every distinct content's r by a full evaluation of the README's
    formula, each shared idf summed in the terms' sorted order (the one
    order, so that the floats are comparable exactly)."""
    docs = {oracle_text(e): terms(oracle_text(e)) for e in entries}
    held = [terms(oracle_text(e)) for e in entries]
    count, average = len(held), sum(map(len, held)) / len(held)
    weights = {}
    for term in sorted(terms(message)):
        n = sum(1 for own in held if term in own)
        if n:
            weights[term] = math.log(1.0 + (count - n + 0.5) / (n + 0.5))
    ceiling = sum(weights.values()) * (1.2 + 1.0 + 1.0)
    shares = {}
    for content, own in docs.items():
        shared = 0.0
        for term, weight in weights.items():
            if term in own:
                shared += weight
        part = (1.2 + 1.0) / (1.0 + 1.2 * (0.25 + 0.75 * len(own) / average)) + 1.0
        shares[content] = shared * part / ceiling if shared else 0.0
    return shares


@settings(max_examples=300)
@given(
    entries=st.lists(
        st.fixed_dictionaries({"content": chat_text}), min_size=1, max_size=40
    ),
    message=st.lists(st.sampled_from([*sorted(set(CHAT)), "zebra"]), max_size=5).map(
        " ".join
    ),
)
@example(  # "work" is not visited: no content holding only it can beat the best
    entries=[{"content": "gift dad"}, *({"content": "work"} for _ in range(9))],
    message="gift work",
)
def test_property_the_pruned_relevance_is_the_full_evaluation(entries, message):
    """Relevance visits the terms rarest first and stops once no content
    left can beat the best: every counted content's share and factor, and
    best, are still those of the full evaluation, float for float; and a
    content's own stream (its rarest shared term's, at its length) is
    bounded at least by its factor, visited or not."""
    stats = Statistics(entries)
    relevance = stats.relevance(message)
    plain = plain_shares(entries, message)
    best = max(plain.values())
    assert relevance.best == best
    bounds = relevance.bounds()
    for content, r in plain.items():
        entry = {"content": content}
        assert relevance.share(entry) == r
        factor = oracle_factor(r, best)
        assert relevance.factor(entry) == factor
        shared = [t for t in relevance.weights if t in terms(content)]
        if factor and shared:
            rarest = min(shared, key=lambda t: (len(stats._postings[t]), t))
            assert bounds[(rarest, len(terms(content)))] >= factor


def test_a_common_term_no_content_can_win_with_is_not_visited():
    """The term "work" is in nine contents of ten: a content holding only it cannot
    beat "gift dad work" (gift and dad are rarer), so it is not visited, and
    its share is computed when asked, as the full evaluation computes it."""
    entries = [{"content": "gift dad work"}]
    entries += [{"content": f"work {word}"} for word in ("a1", "b2", "c3", "d4")]
    entries += [{"content": "work"}] * 4 + [{"content": "piano"}]
    relevance = Statistics(entries).relevance("gift dad work")
    assert list(relevance._share) == ["gift dad work"]  # the visited contents
    plain = plain_shares(entries, "gift dad work")
    assert relevance.share({"content": "work"}) == plain["work"] > 0.0
    assert relevance.factor({"content": "work"}) == 0.0  # below the floor
    assert relevance.best == plain["gift dad work"]


# --- statistics kept by writes -------------------------------------------------


@given(
    entries=st.lists(entry, min_size=1, max_size=12),
    removed=st.lists(st.integers(0, 11), max_size=12),
    context=contexts,
    at_once=st.booleans(),
)
def test_property_add_and_remove_keep_what_a_rebuild_computes(
    entries, removed, context, at_once
):
    stats = Statistics()
    half = len(entries) // 2
    for e in entries[:half]:
        stats.add(e)
    # made (every other term one by one, or every term in one pass, some
    # made already): then kept by the writes
    for term in list(stats._postings)[::2]:
        stats.by_length(term)
    if at_once:
        stats.by_length_of_every_term()
        assert stats._by_length.keys() == stats._postings.keys()
    for e in entries[half:]:
        stats.add(e)
    gone = {i % len(entries) for i in removed}
    for i in sorted(gone):
        stats.remove(entries[i])
    kept = [e for i, e in enumerate(entries) if i not in gone]
    rebuilt = Statistics(kept)
    assert (stats.count, stats.total_length) == (rebuilt.count, rebuilt.total_length)
    assert stats._frequency == rebuilt._frequency
    assert stats._postings.keys() == rebuilt._postings.keys()
    assert stats._types == rebuilt._types
    assert stats._length_counts == rebuilt._length_counts
    assert stats._always_types == rebuilt._always_types
    # each term's contents by length (what Relevance._visit weighs at once),
    # counted from scratch
    by_length = {}
    for e in kept:
        own = oracle_terms(oracle_text(e))
        for term in own:
            by_length.setdefault(term, {}).setdefault(len(own), set())
            by_length[term][len(own)].add(oracle_text(e))
    assert {
        term: {length: set(held) for length, held in stats.by_length(term).items()}
        for term in stats._postings
    } == by_length
    assert stats._by_length.keys() <= stats._postings.keys()
    mine, theirs = stats.scorer(context), rebuilt.scorer(context)
    for e in kept:
        assert mine(e, context, now=NOW) == theirs(e, context, now=NOW)


@given(
    items=st.sets(st.integers(0, 20)),
    holders=st.lists(st.sets(st.integers(0, 20)), max_size=4),
)
def test_property_split_parts_items_by_the_holders_that_hold_them(items, holders):
    """Every item in exactly one part; in a part, every item held by the same
    holders; two parts, not by the same (Relevance weighs a part once)."""
    parts = _ranking.split(items, holders)
    assert sorted(x for part in parts for x in part) == sorted(items)
    held_by = [{tuple(x in h for h in holders) for x in part} for part in parts]
    assert all(len(signatures) == 1 for signatures in held_by)
    assert len({min(signatures) for signatures in held_by}) == len(parts)


def test_removing_an_entry_never_added_names_it():
    stats = Statistics([{"id": "a", "content": "kept"}])
    with pytest.raises(ValueError, match="entry 'b': its content is not counted"):
        stats.remove({"id": "b", "content": "never added"})


# --- the fast recall is retrieve_pools with the scorer -------------------------

pool_lists = st.lists(
    st.builds(
        Pool,
        st.sampled_from(["p1", "p2", "p3"]),
        st.integers(0, 40),
        st.integers(0, 4),
        st.one_of(st.none(), st.lists(st.sampled_from(["note", "fact", "task"]))),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda pool: pool.name,
)


# A content that is not a str (an imported ``"content": 4711``) is its str().
loose_entry = entry.flatmap(
    lambda e: st.sampled_from([e["content"], 42, 4711, 2.5, None]).map(
        lambda content: {**e, "content": content}
    )
)


@settings(max_examples=300)
@given(
    entries=st.lists(loose_entry, max_size=40),
    pools=pool_lists,
    context=contexts,
    first=st.sampled_from([1, 4]),
    share=st.sampled_from([1, 4]),
)
def test_property_recall_equals_retrieve_pools_with_the_scorer(
    entries, pools, context, first, share
):
    """On small stores too: the first round and the share left to the core
    are made small, so that the subset's rounds run."""
    entries = [dict(e, id=str(i)) for i, e in enumerate(entries)]
    saved = _subset._FIRST_ROUND, _subset._MAX_SHARE
    _subset._FIRST_ROUND, _subset._MAX_SHARE = first, share
    try:
        check_recall(entries, pools, context)
    finally:
        _subset._FIRST_ROUND, _subset._MAX_SHARE = saved


# Messages naming a time and nothing else (NOW is Monday 1 June 2026): the
# window alone moves a score (TIME_FACTOR), so a fast path that drops it differs.
TIME_ONLY = ["yesterday", "last week", "in January", "in 2024", "on 30 May"]


@settings(max_examples=150)
@given(
    entries=st.lists(loose_entry, max_size=30),
    pools=pool_lists,
    message=st.sampled_from(TIME_ONLY + ["paint last week", "sunsets in 2024"]),
    tags=st.lists(st.sampled_from(["a", "b"]), max_size=2),
    project=st.sampled_from([None, "p"]),
)
@example(
    entries=[
        {"content": "paint", "type": "note", "created": "2026-05-30"},
        {"content": "paint", "type": "note", "created": "2024-02-02"},
    ],
    pools=[Pool("all", 10**6, 1)],
    message="last week",
    tags=[],
    project=None,
)
def test_property_fast_scores_equal_the_scorer_for_a_message_naming_a_time(
    entries, pools, message, tags, project
):
    """The one-loop recall's scores, entry by entry, are the scorer's when
    the message names a time (a time-only one: no term, the window alone
    decides), and so is its recall."""
    entries = [dict(e, id=str(i)) for i, e in enumerate(entries)]
    context = {"message": message, "tags": tags, "project": project}
    stats = Statistics(entries)
    relevance = stats.relevance(message, NOW)
    assert relevance.windows
    scorer = stats.scorer(context, relevance=relevance)
    fast = _ranking._fast_scores(
        stats, entries, context, NOW, relevance, _ranking._Split()
    )
    assert fast == [scorer(e, context, now=NOW) for e in entries]
    for chosen in (pools, floored(pools, relevance)):
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            expected = poolsplit.retrieve_pools(
                entries, chosen, context, scorer=scorer, now=NOW
            )
            got = recall_by_scores(
                stats,
                entries,
                chosen,
                context,
                token_counter=poolsplit.default_token_counter,
                now=NOW,
                relevance=relevance,
            )
        assert got == expected
        messages = [str(w.message) for w in warned]  # the same, by position
        assert messages[: len(messages) // 2] == messages[len(messages) // 2 :]


def check_recall(entries, pools, context):
    """recall_by_scores is retrieve_pools with the scorer, with the pools as
    given and with the floor the store gives them."""
    stats = Statistics(entries)
    relevance = stats.relevance(context["message"])
    for chosen in (pools, floored(pools, relevance)):
        check_pools(stats, entries, chosen, context)


def check_pools(stats, entries, pools, context):
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        expected = poolsplit.retrieve_pools(
            entries, pools, context, scorer=stats.scorer(context), now=NOW
        )
        got = recall_by_scores(
            stats,
            entries,
            pools,
            context,
            token_counter=poolsplit.default_token_counter,
            now=NOW,
        )
    assert got == expected
    messages = [str(w.message) for w in warned]  # the same, by the same positions
    assert messages[: len(messages) // 2] == messages[len(messages) // 2 :]
    assert all(a is b for name in got for a, b in zip(got[name], expected[name]))


def recall_floored(stats, entries, context, relevance, most, *, now=NOW):
    """(pools, result): recall_by_scores into one pool of ``most`` entries,
    with ``relevance`` and the floor the store gives the pool."""
    pools = floored([Pool("all", 10**6, most)], relevance)
    got = recall_by_scores(
        stats,
        entries,
        pools,
        context,
        token_counter=poolsplit.default_token_counter,
        now=now,
        relevance=relevance,
    )
    return pools, got


def test_a_content_that_is_not_a_string_is_scored_as_its_text():
    """Issue 35: the one-loop recall gave an entry whose content is 4711 the
    factor of an entry sharing nothing (0 under the floor: not loaded); it
    is the text "4711", as the scorer and the core read it."""
    entries = [
        {"id": "n", "content": 4711, "created": "2026-01-01"},
        *({"id": str(i), "content": f"note {i}"} for i in range(12)),
    ]
    context = {"message": "ticket 4711", "tags": [], "project": None}
    stats = Statistics(entries)
    relevance = stats.relevance(context["message"])
    _, r, factor = oracle_score(entries, entries[0], context)
    assert r > 0.0 and relevance.factor(entries[0]) == factor > 1.0
    pools, got = recall_floored(stats, entries, context, relevance, 3)
    assert [e["id"] for e in got["all"]] == ["n"]
    check_recall(entries, pools, context)


def test_recall_on_many_entries_reads_a_subset_and_agrees(monkeypatch):
    entries = [
        {"id": str(i), "content": f"note {i} on topic {i % 50}", "created": 1.7e9 + i}
        for i in range(2000)
    ]
    pools = [Pool("a", 400, 3), Pool("b", 400, 2)]
    context = {"message": "topic 7", "tags": [], "project": None}
    original = _ranking._core
    seen = []

    def core(subset, *args):
        seen.append(len(subset))
        return original(subset, *args)

    monkeypatch.setattr(_ranking, "_core", core)
    check_recall(entries, pools, context)  # the same as the core on every entry
    assert seen and max(seen) < len(entries) // 4


# --- terms and the stemmer -------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [  # Porter (1980)'s own examples, step by step
        ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"),
        ("feed", "feed"), ("agreed", "agre"), ("plastered", "plaster"),
        ("motoring", "motor"), ("sing", "sing"), ("conflated", "conflat"),
        ("troubled", "troubl"), ("sized", "size"), ("hopping", "hop"),
        ("falling", "fall"), ("filing", "file"), ("happy", "happi"),
        ("relational", "relat"), ("conditional", "condit"),
        ("rational", "ration"), ("triplicate", "triplic"),
        ("formative", "form"), ("revival", "reviv"), ("adjustable", "adjust"),
        ("adoption", "adopt"), ("probate", "probat"), ("controll", "control"),
        ("roll", "roll"), ("go", "go"), ("café", "café"),
    ],
)  # fmt: skip
def test_porter_examples(word, expected):
    assert stem(word) == expected


@given(st.text("abcdeilmnorstuvyz", min_size=3, max_size=14))
def test_property_stem_is_snowballs_porter(word):
    assert stem(word) == _PORTER.stemWord(word)


def test_terms_are_stems_of_significant_words():
    assert terms("She paints; her PAINTING was sold, the sunsets too") == {
        "paint",
        "sold",
        "sunset",
    }


@pytest.mark.parametrize(
    ("word", "expected"),
    [  # -ying: Porter's y-to-i needs a vowel before the y; no -ying rule
        ("playing", "plai"), ("played", "plai"), ("play", "plai"),
        ("crying", "cry"), ("dying", "dy"), ("toys", "toi"), ("sky", "sky"),
    ],
)  # fmt: skip
def test_porter_ying_examples(word, expected):
    """Porter (1980) and Snowball's Porter stem "playing" to "plai", as they
    do "play": the forms still meet (a stemmer giving "play" for one and
    "plai" for the other would not)."""
    assert stem(word) == expected


def test_every_form_of_play_is_one_term():
    assert terms("playing") == terms("play") == terms("plays") == terms("played")


# --- the ranking's promises, whole orders ------------------------------------------


def ranked(entries, message, *, project=None, now=NOW):
    """Every entry's id, best first, as recall_by_scores orders one pool
    taking them all (the store's floor applied)."""
    stats = Statistics(entries)
    context = {"message": message, "tags": [], "project": project}
    relevance = stats.relevance(message)
    _, got = recall_floored(stats, entries, context, relevance, len(entries), now=now)
    return [e["id"] for e in got["all"]]


def oracle_ranked(entries, message, *, project=None):
    """The same from the oracle: best first; when some entry shares a term
    with the message, only the entries scoring above 0 (the floor)."""
    context = {"message": message, "tags": [], "project": project}
    scores = [oracle_score(entries, e, context)[0] for e in entries]
    order = list(range(len(entries)))
    if any(oracle_r(entries, e, message) > 0 for e in entries):
        order = [i for i in order if scores[i] > 0]
    order.sort(key=lambda i: -scores[i])
    return [entries[i]["id"] for i in order]


TASKS = [
    {"id": f"t{days}", "type": "task", "content": text, "created": f"2026-05-{d}"}
    for days, (text, d) in enumerate(
        [
            ("Renew the car insurance", "31"),
            ("Call the plumber about the leak", "20"),
            ("Draft the quarterly budget", "02"),
            ("Book flights for the conference", "10"),
        ]
    )
]


def test_a_vague_message_returns_equal_tasks_freshest_first():
    """Nothing in the message tells the tasks apart: recency orders them."""
    assert ranked(TASKS, "what should I pick up next?") == ["t0", "t1", "t3", "t2"]
    assert oracle_ranked(TASKS, "what should I pick up next?") == ranked(
        TASKS, "what should I pick up next?"
    )


def test_an_old_exact_match_beats_fresh_unrelated_entries():
    entries = [
        {"id": "old", "content": "The invoices table is partitioned by month",
         "created": "2025-09-01"},
        *({"id": f"new{i}", "content": text, "created": "2026-05-31"}
          for i, text in enumerate(["The on-call rotation changes every Monday",
                                    "The user's dog is called Biscuit",
                                    "Lunch with the design team on Thursday"])),
    ]  # fmt: skip
    got = ranked(entries, "the invoices report is slow")
    assert got == ["old"]  # the others share nothing: below the floor
    assert got == oracle_ranked(entries, "the invoices report is slow")


def test_a_recall_naming_no_project_does_not_penalise_one():
    entries = [
        {"id": "a", "content": "invoices table indexes", "project": "billing",
         "created": "2026-05-20"},
        {"id": "b", "content": "invoices mailing lists", "created": "2026-05-01"},
    ]  # fmt: skip
    stats = Statistics(entries)
    context = {"message": "invoices", "tags": [], "project": None}
    scorer = stats.scorer(context)
    base = {"tags": [], "project": None}
    plain = {k: v for k, v in entries[0].items() if k != "project"}
    factor = stats.relevance("invoices").factor(entries[0])
    assert scorer(entries[0], context, now=NOW) == (
        poolsplit.default_scorer(plain, base, now=NOW) * factor
    )
    # the fresher first (with the core's x0.5 for a project, "b" would be)
    assert ranked(entries, "invoices") == ["a", "b"]
    # naming another project still costs the core's x0.5
    elsewhere = {"message": "invoices", "tags": [], "project": "shop"}
    assert stats.scorer(elsewhere)(entries[0], elsewhere, now=NOW) < scorer(
        entries[0], context, now=NOW
    )


def test_the_rate_decides_where_relevance_beats_age():
    """exp(30 x r): 0.04 of r is worth the whole recency range (0.3 to 1).
    A rate of 31 would flip this pair, 29 the one after it."""
    assert _ranking.relevance_factor(0.46, 0.5) * 1.0 > (
        _ranking.relevance_factor(0.5, 0.5) * 0.3
    )
    assert _ranking.relevance_factor(0.459, 0.5) * 1.0 < (
        _ranking.relevance_factor(0.5, 0.5) * 0.3 * 1.05
    )
    assert _ranking.relevance_factor(0.5, 0.5) * 0.3 > (
        _ranking.relevance_factor(0.455, 0.5) * 1.0
    )


@given(entries=st.lists(entry, min_size=1, max_size=10), context=contexts)
def test_property_the_whole_ranking_is_the_oracles(entries, context):
    """Every entry's place, not the top 3: one pool taking them all."""
    entries = [
        {k: v for k, v in dict(e, id=str(i)).items() if k not in ("scope", "tags")}
        for i, e in enumerate(entries)
    ]
    message, project = context["message"], context["project"]
    got = ranked(entries, message, project=project)
    expected = oracle_ranked(entries, message, project=project)
    scores = {
        e["id"]: oracle_score(entries, e, {**context, "tags": []})[0] for e in entries
    }
    # equal scores may come in either order in the oracle's sort: compare
    # the scores along each list
    assert [scores[i] for i in got] == [scores[i] for i in expected]


# --- a time in the message ---------------------------------------------------------

DIARY = [
    {"id": "may", "content": "Dinner with Ana at the harbour", "created": "2026-05-12"},
    {"id": "april", "content": "Dinner with Ana downtown", "created": "2026-04-14"},
    {
        "id": "late",
        "content": "Ana said the harbour dinner was great",
        "created": "2026-05-20",
    },  # fmt: skip
]


def test_a_time_in_the_message_steers_toward_entries_created_then():
    """ "last month" on 1 June is May: the May entries are boosted
    x exp(30 x 0.2)."""
    stats = Statistics(DIARY)
    timed = stats.relevance("dinner with Ana last month", NOW)
    plain = stats.relevance("dinner with Ana last month")
    assert timed.windows and plain.windows == ()
    assert timed.weights == plain.weights  # the phrase's words stay terms
    boost = math.exp(30 * 0.2)
    for e in DIARY:
        untimed = _ranking.relevance_factor(timed.share(e), timed.best)
        expected = untimed * (boost if e["id"] != "april" else 1.0)
        assert timed.factor(e) == expected
    context = {"message": "dinner with Ana last month", "tags": [], "project": None}
    pools, got = recall_floored(stats, DIARY, context, timed, 3)
    expected = poolsplit.retrieve_pools(
        DIARY, pools, context, scorer=timed.scorer(context), now=NOW
    )
    assert got == expected
    assert got["all"][-1]["id"] == "april"


def test_a_message_naming_only_a_time_orders_by_it():
    stats = Statistics(DIARY)
    relevance = stats.relevance("what happened in April?", NOW)
    assert relevance.best == 0.0  # no term left but the time's
    factors = [relevance.factor(e) for e in DIARY]
    assert factors == [1.0, math.exp(30 * 0.2), 1.0]


def test_an_entry_not_loaded_scores_0_even_when_its_base_overflows():
    """Issue 35: priority 1.7e308 with a tag (x 1.5) is a base of inf; sharing
    no term of a message that matches another entry, its factor is 0 and
    inf x 0 was NaN, which the core rejects (the recall raised). Not loaded
    is a score of 0, whatever the base."""
    entries = [
        {"id": "huge", "content": "lunch", "base_priority": 1.7e308, "tags": ["a"]},
        {"id": "match", "content": "billing report"},
        *({"id": str(i), "content": f"note {i}"} for i in range(6)),
    ]
    context = {"message": "billing", "tags": ["a"], "project": "p"}
    stats = Statistics(entries)
    relevance = stats.relevance(context["message"])
    assert relevance.factor(entries[0]) == 0.0
    assert stats.scorer(context)(entries[0], context, now=NOW) == 0.0
    assert oracle_score(entries, entries[0], context)[0] == 0.0
    pools, got = recall_floored(stats, entries, context, relevance, 3)
    assert [e["id"] for e in got["all"]] == ["match"]
    check_recall(entries, pools, context)
