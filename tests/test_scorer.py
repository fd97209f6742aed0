"""default_scorer factors and the default token counter / predicate."""

import math
import re
import unicodedata
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st
from oracle import iso_seconds, oracle_score
from oracle import significant_words as oracle_words

import poolsplit
from poolsplit import (
    STOPWORDS,
    default_is_active,
    default_scorer,
    default_token_counter,
    parse_created,
)

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def score(entry, context=None):
    return default_scorer(entry, context, now=NOW)


def recency(days):
    return max(0.3, 1 - 0.7 * days / 90)


# --- priority -------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority", "expected"),
    [(None, 5.0), (7, 7.0), (2.5, 2.5), (0, 0.0), (-3, -3.0), (math.inf, math.inf)],
)
def test_base_priority(priority, expected):
    """base_priority defaults to 5; None is the default; any real is used."""
    entry = {} if priority is None else {"base_priority": priority}
    assert score(entry) == expected
    assert score({"base_priority": None}) == 5.0


@pytest.mark.parametrize("bad", ["5", True, [5], complex(1, 1)])
def test_base_priority_bad_type(bad):
    """A non-real base_priority raises TypeError naming the entry."""
    with pytest.raises(
        TypeError, match=r"^entry \(id='e'\): base_priority must be a real number"
    ):
        score({"id": "e", "base_priority": bad})


def test_base_priority_nan():
    """A NaN base_priority raises ValueError."""
    with pytest.raises(ValueError, match=r"^entry \(id=None\): base_priority must"):
        score({"base_priority": float("nan")})


# --- recency --------------------------------------------------------------


@pytest.mark.parametrize("days", [0, 45, 90, 200, -10])
def test_recency_factor(days):
    """max(0.3, 1 - 0.7 * days / 90); the future counts as 0 days."""
    created = NOW - timedelta(days=days)
    assert score({"created": created}) == pytest.approx(5 * recency(max(0, days)))


@pytest.mark.parametrize(
    "created",
    [
        "2025-12-02",
        "2025-12-02T00:00:00Z",
        "2025-12-02T00:00:00z",
        "2025-12-02T00:00Z",
        "2025-12-02 00:00:00",
        "2025-12-02T05:00:00+05:00",
        "2025-12-02T05:00:00+0500",
        "2025-12-02T05:00+05",
        "2025-12-01T19:00:00-05:00",
        "2025-12-02T00:00:00.0Z",
        "2025-12-02T00:00:00.000000000Z",
        "2025-12-02T00:00:00,000Z",
        "  2025-12-02T00:00:00Z  ",
        date(2025, 12, 2),
        datetime(2025, 12, 2),
        datetime(2025, 12, 2, 5, tzinfo=timezone(timedelta(hours=5))),
        (datetime(2025, 12, 2, tzinfo=timezone.utc) - EPOCH).total_seconds(),
        int((datetime(2025, 12, 2, tzinfo=timezone.utc) - EPOCH).total_seconds()),
    ],
)
def test_created_forms_30_days(created):
    """Every supported created form means the same instant (30 days old)."""
    assert score({"created": created}) == pytest.approx(5 * recency(30))


def test_fractional_seconds_any_length():
    """Fractions of 1..9 digits parse; beyond microseconds they are truncated."""
    base = parse_created("2025-12-02T00:00:00Z")
    assert parse_created("2025-12-02T00:00:00.5Z") == base + 0.5
    assert parse_created("2025-12-02T00:00:00.123456789Z") == pytest.approx(
        base + 0.123456
    )


@pytest.mark.parametrize(
    "created",
    [
        "yesterday",
        "2025-13-01",
        "2025-02-30",
        "",
        True,
        math.nan,
        math.inf,
        ["2025-01-01"],
        None,
    ],
)
def test_unparseable_created_no_decay(created):
    """Missing or unparseable created means factor 1.0."""
    assert score({"created": created}) == 5.0


# --- tags -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "context_tags", "factor"),
    [
        (["a", "b"], ["a"], 1.25),
        (["a", "b"], ["a", "b", "c"], 1.5),
        (["a", "b"], [], 1.0),
        (["a", "a", "b"], ["a"], 1.25),  # distinct tags
        ("alpha", ["alpha"], 1.5),  # bare str is one tag
        ("alpha", "alpha", 1.5),
        ("alpha", ["a"], 1.0),
        ([], ["a"], 1.0),
        ((1, 2), ["1"], 1.25),  # non-str items are str()
        ({"x"}, None, 1.0),
        (frozenset({"x"}), ("x",), 1.5),
    ],
)
def test_tag_factor(tags, context_tags, factor):
    """1 + 0.5 * share of the entry's tags found in context tags."""
    assert score({"tags": tags}, {"tags": context_tags}) == pytest.approx(5 * factor)


def test_tags_bad_type():
    """tags that are not str or list raise TypeError."""
    with pytest.raises(
        TypeError, match=r"tags must be a str or a list of str, got int"
    ):
        score({"tags": 3})


def test_context_tags_bad_type():
    """context['tags'] of the wrong type raises."""
    with pytest.raises(TypeError, match=r"^context\['tags'\] must be"):
        score({}, {"tags": 3.5})


# --- project --------------------------------------------------------------


@pytest.mark.parametrize(
    ("project", "context", "factor"),
    [
        (None, {"project": "x"}, 1.0),
        ("x", {"project": "x"}, 1.5),
        ("x", {"project": "y"}, 0.5),
        ("x", {}, 0.5),
        ("x", None, 0.5),
    ],
)
def test_project_factor(project, context, factor):
    """None/missing 1.0, match 1.5, mismatch 0.5."""
    assert score({"project": project}, context) == 5 * factor


def test_project_missing_is_general():
    """A missing project is 1.0."""
    assert score({}, {"project": "x"}) == 5.0


# --- message --------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "content", "factor"),
    [
        # 3 of 20 words = 0.15: not above the threshold
        (" ".join(f"w{i:02d}" for i in range(20)), "w00 w01 w02", 1.0),
        # 4 of 20 = 0.2 > 0.15
        (" ".join(f"w{i:02d}" for i in range(20)), "w00 w01 w02 w03", 1.3),
        ("deploy cluster", "deploy the cluster", 2.5),
        ("deploy cluster", "nothing", 1.0),
        ("", "deploy", 1.0),
        ("the and for", "the and for", 1.0),  # only stopwords
        ("go to it", "go to it", 1.0),  # only short words
        ("Deploy CLUSTER", "deploy cluster", 2.5),  # case-insensitive
        ("deploy_cluster", "deploy cluster", 2.5),  # underscore splits
        (None, "deploy", 1.0),
    ],
)
def test_message_factor(message, content, factor):
    """1 + 1.5 * overlap when overlap > 0.15."""
    got = score({"content": content}, {"message": message})
    assert got == pytest.approx(5 * factor)


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ("café", "un café noir"),
        ("naïve résumé", "résumé naïve"),
        ("москва", "Москва столица"),
        ("東京タワー", "東京タワー"),
        (unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")),
        (unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")),
    ],
)
def test_unicode_words_match(message, content):
    """Accented and non-Latin words are words; NFC and NFD forms are equal."""
    assert score({"content": content}, {"message": message}) > 5.0


def test_content_non_str_is_str():
    """Non-str content is matched via str()."""
    assert score({"content": 12345}, {"message": "12345"}) == pytest.approx(12.5)


def test_words_nfd_accent_stays_in_word():
    """A decomposed accent does not split the word."""
    nfd = unicodedata.normalize("NFD", "résumé")
    assert poolsplit.significant_words(nfd) == frozenset({"résumé"})


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_rule_matches_regex(text):
    """On ASCII text the tokenizer is exactly [a-z0-9]+ len>2 minus stopwords."""
    expected = {
        w for w in re.findall("[a-z0-9]+", text.lower()) if len(w) > 2
    } - STOPWORDS
    assert poolsplit.significant_words(text) == expected


@given(st.text())
def test_unicode_rule_matches_plain_definition(text):
    """Any text: runs of letters/digits (\\w without _) of the NFC lowercase
    form, 3+ characters, minus stopwords."""
    runs = re.findall(r"[^\W_]+", unicodedata.normalize("NFC", text).lower())
    expected = {w for w in runs if len(w) >= 3} - STOPWORDS
    assert poolsplit.significant_words(text) == expected


@given(st.text())
def test_significant_words_match_the_oracle(text):
    """The public reader is the rule the oracle writes from the README."""
    assert poolsplit.significant_words(text) == oracle_words(text)


@pytest.mark.parametrize("bad", [None, b"bytes", 3])
def test_significant_words_bad_type(bad):
    """The error names the type given (a mutant naming NoneType survived)."""
    kind = type(bad).__name__
    with pytest.raises(TypeError, match=rf"^text must be a str, got {kind}$"):
        poolsplit.significant_words(bad)


def _digits(count):
    return st.text(alphabet="0123456789", min_size=count, max_size=count)


common_iso = st.builds(
    lambda date_part, time_part, zone: date_part + time_part + zone,
    st.builds("{}-{}-{}".format, _digits(4), _digits(2), _digits(2)),
    st.one_of(
        st.just(""),
        st.builds(
            "{}{}:{}:{}".format,
            st.sampled_from("Tt "),
            _digits(2),
            _digits(2),
            _digits(2),
        ),
    ),
    st.one_of(
        st.just(""),
        st.sampled_from("Zz"),
        st.builds("{}{}:{}".format, st.sampled_from("+-"), _digits(2), _digits(2)),
    ),
)
real_iso = st.builds(
    lambda moment, minutes: moment.replace(
        microsecond=0, tzinfo=timezone(timedelta(minutes=minutes))
    ).isoformat(),
    st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30)),
    st.integers(-(24 * 60 - 1), 24 * 60 - 1),
)


@given(st.one_of(common_iso, real_iso, st.text(max_size=30)))
def test_fast_iso_forms_read_as_the_readme_grammar(text):
    """The forms datetime.isoformat() writes (which a fromisoformat shortcut
    reads) and any text give exactly the README oracle's result, for valid
    and invalid dates, hours, and offsets up to 99:99."""
    assert parse_created(text) == iso_seconds(text)


def test_stopwords_match_spec():
    """The stopword list is the spec's list."""
    spec = (
        "the and for are but not you all can her was one our out day has had his "
        "how man new now old see two way who did its let put say she too use that "
        "this with from they them then than have will your what when were been "
        "into some more very just over only"
    )
    assert frozenset(spec.split()) == STOPWORDS


def test_all_factors_multiply():
    """score = priority x recency x tags x project x message."""
    entry = {
        "base_priority": 4,
        "created": NOW - timedelta(days=45),
        "tags": ["a", "b"],
        "project": "p",
        "content": "deploy cluster",
    }
    context = {"tags": ["a"], "project": "p", "message": "deploy cluster"}
    assert score(entry, context) == pytest.approx(4 * recency(45) * 1.25 * 1.5 * 2.5)


def test_naive_now_is_utc():
    """A naive now is UTC."""
    entry = {"created": "2025-12-02"}
    assert default_scorer(entry, None, now=datetime(2026, 1, 1)) == score(entry)


def test_now_none_reads_clock():
    """now=None uses the current time: a created far in the future has no decay."""
    assert default_scorer({"created": "2999-01-01"}) == 5.0


def test_now_bad_type():
    """now must be a datetime."""
    with pytest.raises(TypeError, match=r"^now must be a datetime or None, got str$"):
        default_scorer({}, None, now="2026-01-01")


def test_context_not_mapping():
    """context must be a Mapping."""
    with pytest.raises(
        TypeError, match=r"^context must be a Mapping or None, got list$"
    ):
        default_scorer({}, [], now=NOW)


# --- defaults -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 1), ("abc", 1), ("abcd", 1), ("abcdefgh", 2), ("x" * 401, 100)],
)
def test_default_token_counter(text, tokens):
    """max(1, len(text) // 4)."""
    assert default_token_counter(text) == tokens


@pytest.mark.parametrize(
    ("entry", "active"),
    [
        ({}, True),
        ({"status": "active"}, True),
        ({"status": None}, True),
        ({"status": "archived"}, False),
        ({"status": "Active"}, False),
        ({"superseded_by": "x"}, False),
        ({"superseded_by": ""}, True),
        ({"superseded_by": None}, True),
        ({"superseded_by": []}, True),
        ({"status": "active", "superseded_by": 1}, False),
    ],
)
def test_default_is_active(entry, active):
    """Active unless status is set and not 'active', or superseded_by is truthy."""
    assert default_is_active(entry) is active
    got = poolsplit.retrieve([entry], poolsplit.Pool("p", 10, 5), now=NOW)
    assert (got == [entry]) is active


@pytest.mark.parametrize(
    ("priority", "expected"),
    [(Fraction(5, 2), 2.5), (type("IntSub", (int,), {})(7), 7.0)],
)
def test_base_priority_other_reals(priority, expected):
    """Any numbers.Real (a Fraction, an int subclass) is a valid base_priority."""
    assert score({"base_priority": priority}) == expected


# --- the score's type ----------------------------------------------------------


def test_default_scorer_returns_a_float():
    """6: default_scorer({}) returned the int 5."""
    score = default_scorer({}, now=NOW)
    assert type(score) is float and score == 5.0


# --- base_score: the published rule -------------------------------------------

NOW_SECONDS = (NOW - EPOCH).total_seconds()
fields = st.fixed_dictionaries(
    {},
    optional={
        "base_priority": st.one_of(
            st.floats(allow_nan=False),
            st.integers(-(10**6), 10**6),
            st.sampled_from([1.7e308, -1.7e308, 1.2e308, 5e-324]),
        ),
        "created": st.floats(NOW_SECONDS - 4e7, NOW_SECONDS + 4e6),
        "tags": st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
        "project": st.sampled_from(["p", "q"]),
    },
)
queries = st.fixed_dictionaries(
    {
        "tags": st.lists(st.sampled_from(["a", "b", "d"]), max_size=3),
        "project": st.sampled_from([None, "p", "q"]),
    }
)


@given(fields, queries)
def test_base_score_is_default_scorer_without_a_message(entry, context):
    """base_score of an entry's fields, read as the README reads them, is
    default_scorer's score with no message and the README's oracle's, float
    for float."""
    got = poolsplit.base_score(
        float(entry.get("base_priority", 5.0)),
        entry.get("created"),
        entry.get("tags"),
        entry.get("project"),
        NOW_SECONDS,
        frozenset(context["tags"]),
        context["project"],
    )
    expected = score(entry, context)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    readme = oracle_score(entry, context, now=NOW)
    assert got == readme or (math.isnan(got) and math.isnan(readme))


def test_base_score_multiplies_in_the_documented_order():
    """priority x recency x tags x project: near the float limit a shared
    tag (x1.5) overflows before a project of another (x0.5) could halve it,
    and default_scorer, which calls it, agrees."""
    entry = {"base_priority": 1.7e308, "tags": ["a"], "project": "p"}
    context = {"tags": ["a"], "project": "q"}
    fields = (1.7e308, None, ["a"], "p", NOW_SECONDS, frozenset("a"), "q")
    assert poolsplit.base_score(*fields) == math.inf == score(entry, context)


def test_base_score_leaves_out_what_is_missing():
    """No created, tags or project: each a factor of 1; the context is
    optional; the future is 0 days old."""
    assert poolsplit.base_score(3.0, None, None, None, NOW_SECONDS) == 3.0
    future = NOW_SECONDS + 86400.0
    assert poolsplit.base_score(3.0, future, [], None, NOW_SECONDS) == 3.0
    assert poolsplit.base_score(3.0, None, ["a"], "p", 0.0) == 1.5  # x0.5
    assert "base_score" in poolsplit.__all__
