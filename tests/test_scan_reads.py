"""The readers of an entry's fields behind the scan (issue 35, core38).

``_base_score`` reads the fields through ``_priority``, ``_tags`` and
``parse_created``; the scan reads their usual kinds in place and hands every
other value to it (scan39: tests/test_scan_fast.py pins the two together).
These properties pin it to what the README says the fields mean (the oracle)
and to the public readers, with the timestamp cache cold and warm.
"""

from datetime import date, datetime, timedelta, timezone
from fractions import Fraction

from conftest import NOW
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import created_seconds, oracle_score, priority_of, tag_set

import poolsplit


class Text(str):
    """A str subclass: read by parse_created, never by the cache shortcut."""


NOW_SECONDS = (NOW - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()
moments = st.datetimes(
    datetime(2024, 1, 1), datetime(2026, 6, 1), timezones=st.just(timezone.utc)
)
iso = st.builds(
    lambda moment, spec, sep: moment.isoformat(sep=sep, timespec=spec),
    moments,
    st.sampled_from(["seconds", "minutes", "milliseconds", "microseconds"]),
    st.sampled_from(["T", " "]),
) | st.builds(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ"), moments)
created = st.one_of(
    st.none(),
    iso,
    iso.map(Text),
    st.sampled_from(["", "soon", "2025-02-30", "2025-13-01", " 2025-06-01 "]),
    moments,
    moments.map(lambda moment: moment.replace(tzinfo=None)),
    st.dates(date(2024, 1, 1), date(2026, 6, 1)),
    st.floats(NOW_SECONDS - 4e7, NOW_SECONDS + 4e6),
    st.integers(0, int(NOW_SECONDS) + 10**6),
)
tags = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
    st.lists(st.sampled_from(["a", "b", 7]), max_size=3).map(tuple),
    st.sets(st.sampled_from(["a", "c"])),
    st.sampled_from(["a", "z"]),
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "base_priority": st.one_of(
            st.none(),
            st.integers(-(10**6), 10**6),
            st.floats(allow_nan=False),
            st.sampled_from([10**400, -(10**400), Fraction(5, 2), 1.7e308]),
        ),
        "created": created,
        "tags": tags,
        "project": st.sampled_from([None, "p", "q"]),
    },
)
contexts = st.fixed_dictionaries(
    {
        "tags": st.lists(st.sampled_from(["a", "b", "7"]), max_size=3),
        "project": st.sampled_from([None, "p", "q"]),
    }
)


@given(entries, contexts, st.booleans())
@example({"created": "2025-06-01T00:00:00", "tags": None}, {"tags": []}, True)
@example({"created": Text("2025-06-01")}, {"tags": ["a"]}, True)
def test_the_scan_reads_fields_as_the_readme_says(entry, context, warm):
    """The scan's score and ``created`` instant are base_score of the fields
    as the README reads them (the oracle), and the instant is parse_created's,
    whether the timestamp cache holds the str (the shortcut) or not."""
    poolsplit.clear_caches()
    value = entry.get("created")
    if warm:  # the cache now holds a str value: the shortcut's hit
        poolsplit.parse_created(value)
    query = poolsplit._query(context, NOW)
    score, seconds = poolsplit._base_score(entry, query, 0)
    expected_seconds = created_seconds(value)
    assert seconds == expected_seconds == poolsplit.parse_created(value)
    expected = poolsplit.base_score(
        priority_of(entry),
        expected_seconds,
        tag_set(entry.get("tags"), "tags"),
        entry.get("project"),
        NOW_SECONDS,
        frozenset(context.get("tags", ())),
        context.get("project"),
    )
    assert score == expected == poolsplit.default_scorer(entry, context, now=NOW)
    assert score == oracle_score(entry, context, now=NOW)


def test_a_cached_str_is_read_as_it_was_parsed():
    """A created str parsed once is read from the cache on the next call, and
    a str the cache holds as having no instant stays undated."""
    poolsplit.clear_caches()
    query = poolsplit._query(None, NOW)
    old = (NOW - timedelta(days=45)).isoformat()
    first = poolsplit._base_score({"created": old}, query, 0)
    assert old in poolsplit._parse_iso.new
    assert poolsplit._base_score({"created": old}, query, 0) == first
    assert first == (5.0 * (1 - 0.7 * 45 / 90), NOW_SECONDS - 45 * 86400)
    poolsplit.parse_created("soon")
    assert poolsplit._base_score({"created": "soon"}, query, 0) == (5.0, None)
