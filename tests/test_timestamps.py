"""One timestamp grammar: the README's "Timestamps", read by parse_created.

The oracle's reader is written from the README alone; the library's one
public reader must agree with it on every form the grammar has (and on any
other text), and retrieval must score every form the same.
"""

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import iso_seconds, oracle_score

from poolsplit import Pool, default_scorer, parse_created, retrieve

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
NOV1 = datetime(2025, 11, 1, tzinfo=timezone.utc).timestamp()

# The forms issue 21 found read by the library and not by the README.
ISSUE_FORMS = [
    ("2025-11-01 00:00:00Z", NOV1),
    ("2025-11-01Z", NOV1),
    ("2025-11-01T00:00:00z", NOV1),
    ("2025-11-01T05:30:00+0530", NOV1),
    ("2025-11-01T05:00+05", NOV1),
    ("2025-11-01T00:00:00,5Z", NOV1 + 0.5),
    (" 2025-11-01 ", NOV1),
    ("2025-11-01T05:00:00 +05:00", NOV1),
    ("2025-11-01t00:00z", NOV1),
    ("2025-10-31T19:00-05", NOV1 + 0),
    ("2025-11-01+00", NOV1),
    ("\u30002025-11-01\n", NOV1),  # str.strip() removes Unicode whitespace
]
NO_INSTANT = [
    "2025-02-30",
    "2025-11-01T24:00",
    "2025-11-01T10",
    "20251101",
    "2025-11-01T00:00:00.Z",
    "2025-11-01T00:00+5",
    "2025-11-01T00:00+05:3",
    "2025-11-01TT00:00",
    "2025-11-01  00:00",
    "0000-01-01",
    "\u0662\u0660\u0662\u0665-11-01",  # Arabic-Indic digits
    "2025-11-01 x",
]


@pytest.mark.parametrize(("text", "seconds"), ISSUE_FORMS)
def test_every_form_of_the_grammar_reads_as_the_readme_says(text, seconds):
    assert parse_created(text) == seconds
    assert iso_seconds(text) == seconds


@pytest.mark.parametrize("text", NO_INSTANT)
def test_text_outside_the_grammar_has_no_instant(text):
    assert parse_created(text) is None
    assert iso_seconds(text) is None


@pytest.mark.parametrize(("text", "seconds"), ISSUE_FORMS)
def test_retrieval_scores_every_form_as_the_oracle_does(text, seconds):
    """Issue 21: ' 2025-11-01 ' scored 2.6278 by the library, 5.0 by the oracle."""
    entry = {"created": text, "content": "x"}
    assert default_scorer(entry, None, now=NOW) == oracle_score(entry, None, now=NOW)
    assert default_scorer(entry, None, now=NOW) == pytest.approx(
        5 * (1 - 0.7 * 61 / 90)
    )


def test_parse_created_reads_every_kind_of_value():
    moment = datetime(
        2026, 1, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))
    )
    assert parse_created(moment) == NOW.timestamp()
    assert parse_created(datetime(2026, 1, 1)) == NOW.timestamp()  # naive is UTC
    assert parse_created(date(2026, 1, 1)) == NOW.timestamp()
    assert parse_created(1767225600) == NOW.timestamp()
    assert parse_created(1767225600.5) == NOW.timestamp() + 0.5
    for nothing in (None, True, float("nan"), float("inf"), b"2026-01-01", [2026]):
        assert parse_created(nothing) is None


def _digits(count):
    return st.text(alphabet="0123456789", min_size=count, max_size=count)


def _two(low, high):
    return st.integers(low, high).map("{:02d}".format)


# Every production of the grammar, mostly valid values, sometimes any digits.
dates = st.one_of(
    st.dates(date(1, 1, 1), date(9999, 12, 31)).map(date.isoformat),
    st.builds("{}-{}-{}".format, _digits(4), _digits(2), _digits(2)),
)
times = st.one_of(
    st.just(""),
    st.builds(
        "{}{}:{}{}".format,
        st.sampled_from("Tt "),
        st.one_of(_two(0, 23), _digits(2)),
        st.one_of(_two(0, 59), _digits(2)),
        st.one_of(
            st.just(""),
            st.builds(
                "{}{}".format,
                st.one_of(_two(0, 59), _digits(2)).map(":{}".format),
                st.one_of(
                    st.just(""),
                    st.builds(
                        "{}{}".format,
                        st.sampled_from(".,"),
                        st.text(alphabet="0123456789", min_size=1, max_size=12),
                    ),
                ),
            ),
        ),
    ),
)
spaces = st.sampled_from(["", "", " ", "\t", "  ", "\n"])
offsets = st.one_of(
    st.sampled_from(["", "Z", "z"]),
    st.builds(
        "{}{}{}".format,
        st.sampled_from("+-"),
        st.one_of(_two(0, 23), _digits(2)),
        st.sampled_from(["", ":00", ":30", "45", ":59", "99"]),
    ),
)
surround = st.sampled_from(["", "", " ", "\n", "\u3000", "\t "])
grammar = st.builds(
    lambda lead, d, t, ws, off, trail: f"{lead}{d}{t}{ws}{off}{trail}",
    surround,
    dates,
    times,
    spaces,
    offsets,
    surround,
)


@given(st.one_of(grammar, st.text(max_size=40)))
@example("2004-01-10T18:37:03.999999+05:00")  # near 2**30 s: rounded once
@example("9999-12-31T23:59:59.999999-99:99")
def test_parse_created_is_the_readme_grammar(text):
    assert parse_created(text) == iso_seconds(text)


# --- forms the general reader reads, and an aware now --------------------------


PLUS12 = timezone(timedelta(hours=12))


def ids(entries):
    return [entry["id"] for entry in entries]


NO_MATCH = {"message": "zebra quartz"}


def test_date_with_z_is_utc_midnight():
    """ "2027-01-01Z" is 00:00:00 UTC, so it ties ahead of 00:00:30 (both future)."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:30Z"},
        {"id": "a", "created": "2027-01-01Z"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


def test_fraction_digits_past_six_are_dropped():
    """A seven-digit fraction is read to the microsecond, not as unparseable."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:01Z"},
        {"id": "a", "created": "2027-01-01T00:00:00.1234567Z"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


def test_offset_of_hours_only_has_no_minutes():
    """ "-01" is one hour behind UTC: 23:00-01 is midnight UTC, before 00:00:30Z."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:30Z"},
        {"id": "a", "created": "2026-12-31T23:00:00-01"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


def test_an_aware_now_that_is_not_utc_is_its_instant():
    """A timezone-aware now is the instant it names, whatever its offset:
    12:00 at +12:00 is midnight UTC, so an entry created 12 hours before that
    is half a day old, not a whole day."""
    local = datetime(2026, 1, 1, 12, tzinfo=PLUS12)
    utc = datetime(2026, 1, 1, tzinfo=timezone.utc)
    entry = {"id": "e", "created": "2025-12-31T12:00:00Z", "content": "x"}
    half_day = 5 * (1 - 0.7 * 0.5 / 90)
    assert default_scorer(entry, None, now=local) == half_day
    assert default_scorer(entry, None, now=utc) == half_day
    for pool in (Pool("p", 10, 1, min_score=half_day), Pool("q", 10, 1)):
        assert ids(retrieve([entry], pool, now=local)) == ["e"]
        assert ids(retrieve([entry], pool, NO_MATCH, now=local)) == ["e"]
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    retrieve([entry], Pool("p", 10, 1), scorer=scorer, now=local)
    assert seen == [local] and seen[0].utcoffset() == timedelta(hours=12)


def test_an_aware_now_orders_future_entries_by_its_instant():
    """Created 6 hours after midnight UTC is in the future of 12:00 at +12:00
    (midnight UTC) and counts 0 days; 6 hours before it decays."""
    local = datetime(2026, 1, 1, 12, tzinfo=PLUS12)
    store = [
        {"id": "past", "created": "2025-12-31T18:00:00Z", "base_priority": 5},
        {"id": "future", "created": "2026-01-01T06:00:00Z", "base_priority": 5},
    ]
    assert ids(retrieve(store, Pool("p", 10, 1), now=local)) == ["future"]
