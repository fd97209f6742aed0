"""Time in a message: the span of time an English message names, read by rules.

>>> from datetime import datetime, timezone
>>> now = datetime(2023, 5, 10, 15, 30, tzinfo=timezone.utc)  # a Wednesday
>>> w = window("What did we decide last week?", now)
>>> w.start.isoformat(), w.end.isoformat(), w.phrases
('2023-05-01T00:00:00+00:00', '2023-05-08T00:00:00+00:00', ('last week',))
>>> strip("What did we decide last week?", w)
'What did we decide  ?'
>>> window("May I ask what we decided?", now) is None
True

A recall's message that names a time ("yesterday", "two weeks ago", "in May
2023", "last summer") steers the ranking toward memories created then. This
module finds those expressions and resolves them against the recall's ``now``:
no model, no network, the standard library only, English only (other languages
give ``None``). The caller also gets the character spans of the expressions, so
that words such as "May" or "Friday" do not count as content terms.

Conventions (each the rule of one resolver below):

- A window is half-open, ``[start, end)``, with ``now``'s tzinfo; a naive
  ``now`` is read as UTC (as the store reads a naive ``now``). Days, weeks,
  months and years are calendar units in ``now``'s time zone: "yesterday" is
  the whole of yesterday, from midnight to midnight.
- Weeks start on Monday (ISO 8601). "last week" is the calendar week before
  this one, "this week" the current one (future days included), "next week"
  the one after; "the week before last" is two weeks back, "the week after
  next" two ahead (months, years and weekends alike). "previous" and "this
  past" read as "last", "coming" and "this coming" as "next". The weekend is
  Saturday and Sunday of a week: "last weekend" is the previous week's,
  "this weekend" the current week's (on a Wednesday, the coming one).
- "N days/weeks/months/years ago" is the calendar unit N units before the
  current one (so "a week ago" is "last week", "3 months ago" on 10 May is
  February). N is digits (up to 4), a number word up to twenty, "a"/"an" (1),
  "a couple of" (2), or "a few" (the hull of 2, 3 and 4 units ago). A
  count of 0 ("0 days ago", "0 hours ago") and a compound duration ("2
  weeks and 3 days ago", "a year and a month from now") name no time: no
  one calendar unit is meant, and the words are not read again in part.
  "the past/last N days" (and "the past week", "the last month") is rolling:
  from the same point N units before today to the end of today, so "the last
  week" is the seven days up to today where "last week" is the calendar week;
  "past" needs "the" or a preposition ("past 90 days" also means "beyond 90
  days"), and "the last day/week of ..." is no time.
- Weekdays: "last Friday" is the most recent Friday strictly before today;
  "on Friday" and a bare "Friday" the most recent one on or before today
  (today if it is Friday); "this Friday" the Friday of the current week;
  "next Friday" the first one strictly after today. A bare weekday counts only
  at the end of a sentence or of the message, or before a part of the day
  ("Friday night"), so "Sunday school" and "Monday, Tuesday" are no time.
- Months: "in May" (or "during May") is the most recent May that is not after
  the current month; "last May" the most recent one strictly before it; "this
  May" the one of the current year; "next May" the first one strictly after.
  A bare month name is never a time ("May I ask", "march forward"); "may" and
  "march" in lower case count only after "in", "during" or "since", or with a
  year ("this may fail" and "may 7" are the verb, "in may" and "may 7, 2023"
  the month), and three-letter abbreviations ("Sep") need such a word, a day
  or a year.
- Dates: "2023-05-07", "7 May 2023", "7th of May, 2023", "May 7, 2023",
  "the 7th of May"; without a year, the most recent such date on or before
  today (29 February: the most recent leap day). "May 2023" and "in 2023" are
  that month and that year (years 1900-2099, and a bare year needs "in",
  "during", "since", "throughout" or "the year": "1000 people", "a total of
  2000", "2.0" and "the 1980's" are no time; decades are never read). A date
  that does not exist ("30 February 2023") names no time, and its words are
  not read again as "February 2023".
- "early/mid/late" (also "the beginning/start/middle/end of") a month: days
  1-10, 11-20, 21 to the end; of a year: January-April, May-August,
  September-December.
- Seasons are the northern hemisphere's meteorological ones: spring March-May,
  summer June-August, autumn (or fall) September-November, winter December to
  February; "winter 2023" is the winter whose January is in 2023. "last
  summer" is the most recent summer that has ended; "this summer" the one under
  way, else the nearest one (past or coming); "next summer" the first one
  that starts after today; "in (the) summer" the most recent one that has
  started; "summer 2022"/"the summer of 2022" that year's. A season needs one
  of those words or a year ("summer camp" is no time).
- "March of last year", "the summer of next year", "Friday of last week" (or
  "Friday last week"): that month, season or weekday of the year or week
  "last/this/next year/week" names.
- Holidays (Western, United States for Thanksgiving and the Fourth of July):
  Christmas is 24-26 December (Christmas Eve, Christmas Day, Boxing Day one
  day each), New Year 31 December and 1 January (New Year's Eve, New Year's
  Day one day each), Easter Good Friday to Easter Monday (Easter Sunday one
  day), Halloween, Valentine's Day, Thanksgiving (the fourth Thursday of
  November), the Fourth of July or Independence Day. A holiday needs "at",
  "on", "over", "during", "around", "since", "last", "this", "next" or a year
  ("a Christmas tree" is no time); "last Christmas" is the most recent one
  that has ended, "this" the one under way or else the nearest, "next" the
  first that starts after today, the other words the most recent one begun.
- Parts of a day: morning 05-12, afternoon 12-18, evening 18-24, night 18 to 06
  the next day ("tonight" is today's night, "last night" yesterday's).
  "N hours ago" is the two hours around that moment; "the past N hours" (or
  "the last hour") the N hours before ``now``.
- "since X" reaches from X's start to ``now`` ("since last week", "since May").
- "recently" and "lately" name no window: the ranking's recency prefers fresh
  memories already, and on LoCoMo (benchmarks/when_locomo.py) a 30-day window
  held an answering turn for only 7 of the 17 questions that say "recently".
  "the other day": the seven days before today. "over/at the weekend": the
  most recent weekend that has begun. "earlier today/this week/this month/this
  year": from the start of that unit to ``now``.
- Anchored: "the week before 16 November 2023" is the seven days before that
  date; "the week of <date>" its calendar week; "the weekend before <date>" the
  last Saturday and Sunday before it; "the Friday before <date>" and "the day
  before <date>" (and "after") likewise.

Windows may lie in the future ("tomorrow", "next week", "in two weeks' time",
"3 days from now"; "in two days" alone is read as a duration, no time): the
caller decides what a future window means for memories written in the past.
An expression with a character outside ASCII (but for spaces) is not read. Where
expressions overlap, the longest wins ("the week before 16 November 2023",
not "16 November 2023"). :func:`windows` returns each expression's window in
message order; :func:`window` their hull (the earliest start to the latest
end), with every span, since a message that names two times asks about both.

Cost: O(len(message)). A rule runs only when the lowered message holds one of
its cue words (or a digit), and then its compiled regular expression scans the
message once (its cost per message: benchmarks/README.md, "Figures from code
comments").
"""

from __future__ import annotations

import calendar
import re
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Final, Optional

__all__ = ["Window", "strip", "time_zone", "window", "windows"]


# --- the result ------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A span of time a message names, and where the message names it.

    ``start < end``, both timezone-aware with ``now``'s tzinfo; ``spans`` are
    ``(begin, end)`` character offsets into the message, in message order,
    and ``phrases`` the text at each span.
    """

    start: datetime
    end: datetime
    spans: tuple[tuple[int, int], ...]
    phrases: tuple[str, ...]


def window(message: str, now: datetime) -> Window | None:
    """The time span ``message`` names, resolved against ``now``, or None.

    The hull of every expression :func:`windows` finds: from the earliest
    start to the latest end, with all their spans. None when the message
    names no time (the module docstring states the rules).

    Raises:
        TypeError: ``message`` is not a str, or ``now`` not a datetime.
    """
    found = windows(message, now)
    if not found:
        return None
    return Window(
        start=min(w.start for w in found),
        end=max(w.end for w in found),
        spans=tuple(s for w in found for s in w.spans),
        phrases=tuple(p for w in found for p in w.phrases),
    )


def strip(message: str, found: Window | None) -> str:
    """``message`` with each of ``found``'s spans replaced by one space.

    >>> strip("lunch on Friday with Ana", None)
    'lunch on Friday with Ana'
    """
    if found is None:
        return message
    parts: list[str] = []
    at = 0
    for begin, end in found.spans:
        parts.append(message[at:begin])
        parts.append(" ")
        at = end
    parts.append(message[at:])
    return "".join(parts)


def time_zone(name: str) -> tzinfo:
    """The IANA time zone ``name`` names ("Europe/Paris", "UTC"), from the
    system's database or the ``tzdata`` package (zoneinfo's search order).

    Raises:
        ValueError: ``name`` is no such zone (the message says what is
            wrong, without a field name: the caller adds its own).
    """
    shown = (
        repr(name) if len(name) <= 64 else f"{name[:40]!r}... ({len(name)} characters)"
    )
    try:
        if len(name) > 64:  # no IANA name is so long
            raise ValueError(name)
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"must be an IANA time zone name such as 'Europe/Paris', got {shown}"
        ) from None


# --- the calendar ----------------------------------------------------------


@dataclass(frozen=True)
class _Now:
    """``now`` and what every resolver derives from it."""

    now: datetime
    today: date
    tz: tzinfo

    def days(self, first: date, stop: date) -> tuple[datetime, datetime]:
        """The whole days ``[first, stop)`` as datetimes at midnight."""
        return (
            datetime.combine(first, time(0), tzinfo=self.tz),
            datetime.combine(stop, time(0), tzinfo=self.tz),
        )

    def hours(self, day: date, first: int, hours: int) -> tuple[datetime, datetime]:
        """``hours`` hours of ``day`` from ``first`` o'clock."""
        start = datetime.combine(day, time(first), tzinfo=self.tz)
        return start, start + timedelta(hours=hours)


_Span = tuple[datetime, datetime]


def _add_months(day: date, months: int) -> date:
    """``day`` moved by ``months`` calendar months, clamped to the month's end."""
    year, index = divmod(day.month - 1 + months, 12)
    year += day.year
    last = calendar.monthrange(year, index + 1)[1]
    return date(year, index + 1, min(day.day, last))


def _unit_start(today: date, unit: str) -> date:
    """The first day of the calendar ``unit`` (day, week, month, year) of today."""
    if unit == "week":
        return today - timedelta(days=today.weekday())
    if unit == "month":
        return today.replace(day=1)
    if unit == "year":
        return date(today.year, 1, 1)
    return today


def _shift(first: date, unit: str, count: int) -> date:
    """``first`` moved by ``count`` calendar units."""
    if unit == "day":
        return first + timedelta(days=count)
    if unit == "week":
        return first + timedelta(days=7 * count)
    if unit == "month":
        return _add_months(first, count)
    return _add_months(first, 12 * count)


def _calendar_units(ctx: _Now, unit: str, first: int, last: int) -> _Span:
    """Calendar units ``first`` to ``last`` (inclusive) from the current one."""
    base = _unit_start(ctx.today, unit)
    return ctx.days(_shift(base, unit, first), _shift(base, unit, last + 1))


def _month(ctx: _Now, year: int, month: int) -> _Span:
    first = date(year, month, 1)
    return ctx.days(first, _add_months(first, 1))


def _year(ctx: _Now, year: int) -> _Span:
    return ctx.days(date(year, 1, 1), date(year + 1, 1, 1))


# --- vocabulary ------------------------------------------------------------

_NUMBER_WORDS: Final = {
    word: value
    for value, word in enumerate(
        ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
         "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
         "seventeen", "eighteen", "nineteen", "twenty"),
        start=1,
    )
}  # fmt: skip
_MONTHS: Final = {
    name: index
    for index, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july",
         "august", "september", "october", "november", "december"),
        start=1,
    )
}  # fmt: skip
_MONTH_ABBREVIATIONS: Final = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
    "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
# Month names that are also common English words: in lower case only a year or
# a preposition makes them a month (_month_number).
_AMBIGUOUS_MONTHS: Final = frozenset({"may", "march"})
_WEEKDAYS: Final = {
    name: index
    for index, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
# Part of day: (first hour, hours).
_PARTS: Final = {
    "morning": (5, 7),
    "afternoon": (12, 6),
    "evening": (18, 6),
    "night": (18, 12),
}
# Meteorological seasons: the month each starts in.
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_OTHER_DAY_DAYS: Final = 7


def _alternatives(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first, spaces as ``\\s+``."""
    ordered = sorted(words, key=len, reverse=True)
    return "|".join(w.replace(" ", r"\s+") for w in ordered)


_NUMBER_ALTERNATIVES: Final = _alternatives(
    ["a couple of", "a couple", "couple of", "a few", "an", "a", *_NUMBER_WORDS]
)
# Any unit a duration is counted in, as a part of a compound one.
_ANY_UNIT: Final = r"(?:day|week|fortnight|month|year|hour|minute|second)s?"


def _num_re() -> str:
    """A count: digits, a number word up to twenty, "a", "a couple of", "a few"."""
    return rf"(?P<num>\d{{1,4}}|{_NUMBER_ALTERNATIVES})"


def _year_re(name: str = "year") -> str:
    """A year from 1900 to 2099."""
    return rf"(?P<{name}>(?:19|20)\d\d)(?!\d|['\u2019]?s\b)"  # not "the 1980's"


def _relation(*extra: str) -> str:
    """last/this/next and their synonyms, plus ``extra`` words, as group rel."""
    words = ["this past", "this coming", "last", "this", "next", "previous"]
    words += ["coming", "current", *extra]
    return "(?P<rel>" + _alternatives(words) + ")"


_UNIT: Final = r"(?P<unit>day|week|fortnight|month|year)s?"
_MONTH: Final = "(?P<month>" + _alternatives([*_MONTHS, *_MONTH_ABBREVIATIONS]) + ")"
_DAY: Final = r"(?P<day>[0-3]?\d)(?!\d)(?:st|nd|rd|th)?"
_WEEKDAY: Final = "(?P<weekday>" + _alternatives(_WEEKDAYS) + ")"
_PART: Final = "(?P<part>" + _alternatives(_PARTS) + ")"
_SEASON: Final = "(?P<season>" + _alternatives(_SEASONS) + ")"
_APOSTROPHE: Final = "['\u2019]?"
_HOLIDAY: Final = (
    "(?P<holiday>christmas(?:\\s+(?:eve|day))?|boxing\\s+day|halloween|thanksgiving"
    "|easter(?:\\s+sunday)?|the\\s+fourth\\s+of\\s+july|independence\\s+day"
    "|new\\s+year" + _APOSTROPHE + "s?(?:\\s+(?:eve|day))?"
    "|valentine" + _APOSTROPHE + "s?\\s+day)"
)
# A date with a day: "7 May 2023", "7th of May, 2023", "14September, 2022",
# "May 7, 2023", "May 7th", "the 7th of May"; the year is optional.
_DATES: Final = (
    r"(?:the\s+)?" + _DAY + r"\s*(?:of\s+)?" + _MONTH + r"(?:,?\s*" + _year_re() + ")?",
    _MONTH + r"\s+" + _DAY + r"(?:,?\s*" + _year_re() + ")?",
)
_ISO: Final = (
    r"(?<![\d./-])(?P<year>\d{4})(?P<sep>[-/])(?P<mm>\d\d?)(?P=sep)(?P<dd>\d\d?)"
    r"(?![\d/]|[-.]\d)"
)


# --- resolvers: one rule each ----------------------------------------------


def _number(text: str) -> tuple[int, int]:
    """The count a number phrase names, as a range (lo, hi)."""
    word = " ".join(text.lower().split())
    if word.isdigit():
        if int(word) == 0:
            # "0 hours ago" is no span (read as N it was an hour into the
            # future, "0 days ago" today): the words claim their place, no time.
            raise ValueError("a count of 0 names no time")
        return int(word), int(word)
    if word == "a few":
        return 2, 4
    if "couple" in word:
        return 2, 2
    if word in ("a", "an"):
        return 1, 1
    value = _NUMBER_WORDS[word]
    return value, value


def _unit(text: str) -> tuple[str, int]:
    """A unit word as (calendar unit, multiplier): a fortnight is two weeks."""
    word = text.lower()
    return ("week", 2) if word == "fortnight" else (word, 1)


def _ago(m: re.Match[str], ctx: _Now) -> _Span | None:
    """N units ago: the calendar unit N before the current one."""
    low, high = _number(m.group("num"))
    unit, times = _unit(m.group("unit"))
    return _calendar_units(ctx, unit, -high * times, -low * times)


def _compound(m: re.Match[str], ctx: _Now) -> _Span | None:
    """N units and M units ago (or from now): no one calendar unit is meant,
    and the last part alone ("3 days ago" of "2 weeks and 3 days ago") is a
    wrong window, so the words claim their place and name no time."""
    raise ValueError("a compound duration names no calendar unit")


def _ahead(m: re.Match[str], ctx: _Now) -> _Span | None:
    """In N units: the calendar unit N after the current one."""
    low, high = _number(m.group("num"))
    unit, times = _unit(m.group("unit"))
    return _calendar_units(ctx, unit, low * times, high * times)


def _rolling(m: re.Match[str], ctx: _Now) -> _Span | None:
    """The past N units: from N units before today to the end of today."""
    num = m.group("num")
    _low, high = _number(num) if num else (1, 1)
    unit, times = _unit(m.group("unit"))
    return ctx.days(_shift(ctx.today, unit, -high * times), ctx.today + timedelta(1))


_RELATIVE: Final = {
    "last": -1,
    "previous": -1,
    "past": -1,
    "this": 0,
    "current": 0,
    "next": 1,
    "coming": 1,
}


def _direction(rel: str | None) -> int | None:
    """-1 (last), 0 (this) or 1 (next) for a relation's words ("this past" is
    "past"); None for a preposition ("on", "in", "at") or no word."""
    return None if rel is None else _RELATIVE.get(rel.lower().split()[-1])


def _offset(rel: str) -> int:
    """-1, 0 or 1 for words that are a relation."""
    direction = _direction(rel)
    assert direction is not None, rel
    return direction


def _weekend(ctx: _Now, weeks: int) -> _Span:
    """Saturday and Sunday of the calendar week ``weeks`` from the current one."""
    saturday = _unit_start(ctx.today, "week") + timedelta(days=7 * weeks + 5)
    return ctx.days(saturday, saturday + timedelta(days=2))


def _relative_unit(m: re.Match[str], ctx: _Now) -> _Span | None:
    """last/this/next week, weekend, month, year: calendar units."""
    offset = _offset(m.group("rel"))
    unit = m.group("unit").lower()
    if unit == "weekend":
        return _weekend(ctx, offset)
    return _calendar_units(ctx, unit, offset, offset)


def _two_away(m: re.Match[str], ctx: _Now) -> _Span | None:
    """the week/weekend/month/year before last (two back) or after next."""
    offset = -2 if m.group("dir").lower().startswith("before") else 2
    unit = m.group("unit").lower()
    if unit == "weekend":
        return _weekend(ctx, offset)
    return _calendar_units(ctx, unit, offset, offset)


_DAY_WORDS: Final = {
    "today": 0,
    "yesterday": -1,
    "tomorrow": 1,
    "the day before yesterday": -2,
    "the day after tomorrow": 2,
}


def _day_word(m: re.Match[str], ctx: _Now) -> _Span | None:
    """today, yesterday, tomorrow, the day before yesterday, ... (+ part of day)."""
    words = " ".join(m.group("word").lower().split())
    day = ctx.today + timedelta(days=_DAY_WORDS[words])
    return _part_of(ctx, day, m.group("part"))


def _part_of(ctx: _Now, day: date, part: str | None) -> _Span:
    """The whole ``day``, or its part (morning, afternoon, evening, night)."""
    if part is None:
        return ctx.days(day, day + timedelta(days=1))
    first, hours = _PARTS[part.lower()]
    return ctx.hours(day, first, hours)


def _this_part(m: re.Match[str], ctx: _Now) -> _Span | None:
    """this morning/afternoon/evening, tonight (today's night), last night."""
    word = " ".join(m.group(0).lower().split())
    if word == "tonight":
        return _part_of(ctx, ctx.today, "night")
    if word == "last night":
        return _part_of(ctx, ctx.today - timedelta(days=1), "night")
    return _part_of(ctx, ctx.today, m.group("part"))


# Where a bare weekday may stand: the end of a sentence or of the message
# ("What did we do Friday?"); not in a list ("Monday, Tuesday") or before a noun.
_BARE_END: Final = re.compile(r"\s*(?:[.;:!?]|$)")


def _weekday(m: re.Match[str], ctx: _Now) -> _Span | None:
    """on/last/this/next <weekday> (+ part of day); bare only ending a sentence."""
    part = m.group("part")
    bare = m.group("rel") is None and part is None
    if bare and not _BARE_END.match(m.string, m.end()):
        return None
    direction = _direction(m.group("rel"))
    wanted = _WEEKDAYS[m.group("weekday").lower()]
    back = (ctx.today.weekday() - wanted) % 7
    if direction == -1:
        day = ctx.today - timedelta(days=back or 7)
    elif direction == 0:
        day = _unit_start(ctx.today, "week") + timedelta(days=wanted)
    elif direction == 1:
        day = ctx.today + timedelta(days=(wanted - ctx.today.weekday()) % 7 or 7)
    else:
        day = ctx.today - timedelta(days=back)
    return _part_of(ctx, day, part)


def _month_number(m: re.Match[str], *, framed: bool, day: bool) -> int | None:
    """The month a match names, or None where the word may not be a month.

    ``framed``: a year or a preposition ("in", "last") frames the word;
    ``day``: a day number goes with it. A three-letter abbreviation needs
    either; "may" and "march" in lower case need the frame ("may 7" is read
    as the verb, "in may" and "may 2023" as the month).
    """
    token = m.group("month")
    word = token.lower()
    if word in _MONTH_ABBREVIATIONS:
        return _MONTH_ABBREVIATIONS[word] if framed or day else None
    if word in _AMBIGUOUS_MONTHS and not framed and not token[0].isupper():
        return None
    return _MONTHS[word]


def _named_month(m: re.Match[str], ctx: _Now) -> _Span | None:
    """in/last/this/next <month>: resolved around the current month."""
    direction = _direction(m.group("rel"))
    # "in may" is the month, "this may (fail)" the verb.
    month = _month_number(m, framed=direction is None, day=False)
    if month is None:
        return None
    year = ctx.today.year
    current = ctx.today.month
    if direction == -1:
        year -= month >= current
    elif direction == 1:
        year += month <= current
    elif direction is None:
        year -= month > current
    return _month(ctx, year, month)


def _of_relative(m: re.Match[str], ctx: _Now) -> _Span | None:
    """<month>/<season> of last/this/next year, <weekday> of last/this/next week."""
    offset = _offset(m.group("of"))
    groups = m.groupdict()
    weekday = groups.get("weekday")
    if weekday is not None:
        monday = _unit_start(ctx.today, "week") + timedelta(days=7 * offset)
        day = monday + timedelta(days=_WEEKDAYS[weekday.lower()])
        return ctx.days(day, day + timedelta(days=1))
    year = ctx.today.year + offset
    season = groups.get("season")
    if season is not None:
        return ctx.days(*_season_of(season.lower(), year))
    month = _month_number(m, framed=True, day=False)
    assert month is not None  # framed by its year
    return _month(ctx, year, month)


def _month_year(m: re.Match[str], ctx: _Now) -> _Span | None:
    """<month> <year>: that month."""
    month = _month_number(m, framed=True, day=False)
    assert month is not None  # framed by its year
    return _month(ctx, int(m.group("year")), month)


def _in_year(m: re.Match[str], ctx: _Now) -> _Span | None:
    """in/during <year>: that calendar year."""
    return _year(ctx, int(m.group("year")))


def _date_of(m: re.Match[str], ctx: _Now) -> date | None:
    """The date a day-month(-year) match names.

    None where the month word is not a month; ValueError where no such date
    exists ("30 February", "31 April 2023").
    """
    year = m.group("year")
    month = _month_number(m, framed=year is not None, day=True)
    if month is None:
        return None
    day = int(m.group("day"))
    if year is not None:
        return date(int(year), month, day)
    # No year: the most recent such date on or before today (a leap day may be
    # up to eight years back: 2096 to 2104).
    for back in range(9):
        candidate_year = ctx.today.year - back
        if day <= calendar.monthrange(candidate_year, month)[1]:
            candidate = date(candidate_year, month, day)
            if candidate <= ctx.today:
                return candidate
    raise ValueError(f"no {month}/{day} in the last nine years")


def _on_date(m: re.Match[str], ctx: _Now) -> _Span | None:
    """A date with a day: that day."""
    day = _date_of(m, ctx)
    if day is None:
        return None
    return ctx.days(day, day + timedelta(days=1))


def _iso(m: re.Match[str], ctx: _Now) -> _Span | None:
    """2023-05-07 or 2023/05/07: that day."""
    day = date(int(m.group("year")), int(m.group("mm")), int(m.group("dd")))
    return ctx.days(day, day + timedelta(days=1))


_THIRDS: Final = {
    "early": 0,
    "beginning": 0,
    "start": 0,
    "mid": 1,
    "middle": 1,
    "late": 2,
    "end": 2,
}


def _third(m: re.Match[str], ctx: _Now) -> _Span | None:
    """early/mid/late <month> or <year>: a third of it.

    Without a year, the most recent such third that has begun.
    """
    which = next(_THIRDS[w] for w in m.group("which").lower().split() if w in _THIRDS)
    only_year = m.group("only_year")
    if only_year is not None:
        first = date(int(only_year), 1, 1)
        return ctx.days(
            _add_months(first, 4 * which), _add_months(first, 4 * which + 4)
        )
    year_text = m.group("year")
    month = _month_number(m, framed=year_text is not None, day=False)
    if month is None:
        return None
    if year_text is not None:
        return _third_of_month(ctx, int(year_text), month, which)
    span = _third_of_month(ctx, ctx.today.year, month, which)
    if span[0].date() > ctx.today:
        span = _third_of_month(ctx, ctx.today.year - 1, month, which)
    return span


def _third_of_month(ctx: _Now, year: int, month: int, which: int) -> _Span:
    """Days 1-10, 11-20 or 21 to the end of the month (``which`` 0, 1, 2)."""
    first = date(year, month, 1)
    bounds = (first, first.replace(day=11), first.replace(day=21))
    stop = bounds[which + 1] if which < 2 else _add_months(first, 1)
    return ctx.days(bounds[which], stop)


def _season_of(season: str, year: int) -> tuple[date, date]:
    """The days of ``season`` in ``year`` (winter: the one whose January it is)."""
    first = date(year - (season == "winter"), _SEASONS[season], 1)
    return first, _add_months(first, 3)


def _season(m: re.Match[str], ctx: _Now) -> _Span | None:
    """last/this/next/in <season> [<year>]: meteorological seasons."""
    season = m.group("season").lower()
    year = m.group("year")
    if year is not None:
        return ctx.days(*_season_of(season, int(year)))
    if m.group("rel") is None:
        return None  # "summer camp", "spring cleaning", "the fall"
    around = range(ctx.today.year - 2, ctx.today.year + 3)
    spans = [_season_of(season, y) for y in around]
    return ctx.days(*_occurrence(spans, m.group("rel"), ctx.today))


def _gap(span: tuple[date, date], today: date) -> int:
    """Days between ``today`` and ``span`` (0 inside it)."""
    if span[0] > today:
        return (span[0] - today).days
    if span[1] <= today:
        return (today - span[1]).days + 1
    return 0


def _occurrence(
    spans: list[tuple[date, date]], rel: str, today: date
) -> tuple[date, date]:
    """Which yearly occurrence (oldest first in ``spans``) a relation names.

    last: the most recent that has ended; next: the first that starts after
    today; this: the one under way, else the nearest (the past one on a tie);
    any other word ("in", "at", "over"): the most recent that has begun.
    """
    direction = _direction(rel)
    if direction == -1:
        return [s for s in spans if s[1] <= today][-1]
    if direction == 1:
        return next(s for s in spans if s[0] > today)
    if direction == 0:
        return min(spans, key=lambda s: (_gap(s, today), s[0] > today))
    return [s for s in spans if s[0] <= today][-1]


def _easter(year: int) -> date:
    """Easter Sunday of ``year`` (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    weekday = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * weekday) // 451
    month, day = divmod(h + weekday - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _thanksgiving(year: int) -> date:
    """The fourth Thursday of November (the United States' Thanksgiving)."""
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


# Each holiday's first day in a year and its length in days.
_HOLIDAYS: Final[dict[str, Callable[[int], tuple[date, int]]]] = {
    "christmas": lambda y: (date(y, 12, 24), 3),
    "christmas eve": lambda y: (date(y, 12, 24), 1),
    "christmas day": lambda y: (date(y, 12, 25), 1),
    "boxing day": lambda y: (date(y, 12, 26), 1),
    "new year": lambda y: (date(y - 1, 12, 31), 2),
    "new year eve": lambda y: (date(y, 12, 31), 1),
    "new year day": lambda y: (date(y, 1, 1), 1),
    "halloween": lambda y: (date(y, 10, 31), 1),
    "valentine day": lambda y: (date(y, 2, 14), 1),
    "thanksgiving": lambda y: (_thanksgiving(y), 1),
    "easter": lambda y: (_easter(y) - timedelta(days=2), 4),
    "easter sunday": lambda y: (_easter(y), 1),
    "the fourth of july": lambda y: (date(y, 7, 4), 1),
    "independence day": lambda y: (date(y, 7, 4), 1),
}


def _holiday_key(text: str) -> str:
    """A holiday's words as the key of :data:`_HOLIDAYS` ("New Year's Eve" is
    "new year eve", "Valentines day" "valentine day")."""
    words = " ".join(text.lower().replace("\u2019", "").replace("'", "").split())
    return words.replace("years", "year").replace("valentines", "valentine")


def _holiday(m: re.Match[str], ctx: _Now) -> _Span | None:
    """at/over/last/this/next <holiday> [<year>]: Christmas, Easter, ..."""
    rule = _HOLIDAYS[_holiday_key(m.group("holiday"))]
    year = m.group("year")
    if year is None and m.group("rel") is None:
        return None  # "a Christmas tree", "Halloween costumes"
    years = [int(year)] if year else range(ctx.today.year - 2, ctx.today.year + 3)
    spans = []
    for y in years:
        first, length = rule(y)
        spans.append((first, first + timedelta(days=length)))
    if year is not None:
        return ctx.days(*spans[0])
    return ctx.days(*_occurrence(spans, m.group("rel"), ctx.today))


def _hours_ago(m: re.Match[str], ctx: _Now) -> _Span | None:
    """N hours ago: from an hour before that moment to an hour after it."""
    low, high = _number(m.group("num"))
    return (
        ctx.now - timedelta(hours=high + 1),
        ctx.now - timedelta(hours=low - 1),
    )


def _past_hours(m: re.Match[str], ctx: _Now) -> _Span | None:
    """the past/last N hours (or hour): from N hours before now to now."""
    num = m.group("num")
    _low, high = _number(num) if num else (1, 1)
    return ctx.now - timedelta(hours=high), ctx.now


def _the_weekend(m: re.Match[str], ctx: _Now) -> _Span | None:
    """over/at the weekend: the most recent weekend that has begun."""
    return _weekend(ctx, 0 if ctx.today.weekday() >= 5 else -1)


def _other_day(m: re.Match[str], ctx: _Now) -> _Span | None:
    """the other day: the seven days before today."""
    return ctx.days(ctx.today - timedelta(days=_OTHER_DAY_DAYS), ctx.today)


def _earlier(m: re.Match[str], ctx: _Now) -> _Span | None:
    """earlier today / this week / this month / this year: its start to now."""
    unit = m.group("unit")
    first = _unit_start(ctx.today, unit.lower() if unit else "day")
    start = datetime.combine(first, time(0), tzinfo=ctx.tz)
    return (start, ctx.now) if ctx.now > start else None


def _anchored(m: re.Match[str], ctx: _Now) -> _Span | None:
    """the week/weekend/day/<weekday> before/after/of <date>."""
    anchor = _date_of(m, ctx)
    if anchor is None:
        return None
    what = m.group("what").lower()
    relation = m.group("dir").lower()
    if relation == "of":
        return _anchored_of(ctx, what, anchor)
    step = 1 if relation == "after" else -1
    if what == "week":
        first = anchor - timedelta(days=7) if step < 0 else anchor + timedelta(1)
        return ctx.days(first, first + timedelta(days=7))
    if what == "day":
        day = anchor + timedelta(days=step)
        return ctx.days(day, day + timedelta(days=1))
    # A weekend is found by its Sunday going back, its Saturday going forward.
    wanted = (6 if step < 0 else 5) if what == "weekend" else _WEEKDAYS[what]
    day = anchor + timedelta(days=step)
    while day.weekday() != wanted:
        day += timedelta(days=step)
    if what != "weekend":
        return ctx.days(day, day + timedelta(days=1))
    saturday = day - timedelta(days=1) if step < 0 else day
    return ctx.days(saturday, saturday + timedelta(days=2))


def _anchored_of(ctx: _Now, what: str, anchor: date) -> _Span | None:
    """the week/weekend/day of <date>: the one that holds it."""
    if what == "day":
        return ctx.days(anchor, anchor + timedelta(days=1))
    monday = _unit_start(anchor, "week")
    if what == "week":
        return ctx.days(monday, monday + timedelta(days=7))
    if what == "weekend":
        return ctx.days(monday + timedelta(days=5), monday + timedelta(days=7))
    return None  # "the Friday of 7 May" names no rule


# --- the grammar -----------------------------------------------------------

# "the last week of May", "this week of all weeks": a part of something else.
_NOT_OF: Final = r"(?!\s+of\b)"
_Resolver = Callable[["re.Match[str]", _Now], Optional[_Span]]


_OF_RELATION: Final = "(?P<of>last|this|next|previous|the\\s+coming)"


def _rules() -> list[tuple[re.Pattern[str], _Resolver, tuple[str, ...]]]:
    """Each expression's pattern and resolver (case-insensitive, whole words)."""
    part = r"(?:\s+" + _PART + ")?"
    units = r"(?P<unit>week|weekend|month|year)"
    count = r"(?:\d{1,4}|" + _NUMBER_ALTERNATIVES + r")\s+" + _ANY_UNIT
    table: list[tuple[str, _Resolver]] = [
        (_num_re() + r"\s+" + _UNIT + r"\s+(?:ago|back)", _ago),
        (
            rf"{count}(?:\s*,\s*(?:and\s+)?|\s+and\s+){count}"
            r"(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+)" + count + r")*"
            r"\s+(?:ago|back|from\s+now)",
            _compound,
        ),
        (_num_re() + r"\s+" + _UNIT + r"\s+from\s+now", _ahead),
        (r"in\s+" + _num_re() + r"\s+" + _UNIT + r"'?\s+time", _ahead),
        # "past 90 days" alone is also "beyond 90 days": it needs "the" or "in".
        (
            r"(?:the|in|over|during|within|for)\s+past\s+(?:"
            + _num_re()
            + r"\s+)?"
            + _UNIT
            + _NOT_OF,
            _rolling,
        ),
        # "the last week" is rolling, "the last day (of ...)" no time.
        (
            r"the\s+last\s+(?:" + _num_re() + r"\s+|(?!day\b))" + _UNIT + _NOT_OF,
            _rolling,
        ),
        (r"(?:last|previous)\s+" + _num_re() + r"\s+" + _UNIT, _rolling),
        (_relation() + r"\s+" + units + _NOT_OF, _relative_unit),
        (r"the\s+" + units + r"\s+(?P<dir>before\s+last|after\s+next)", _two_away),
        ("(?P<word>" + _alternatives(_DAY_WORDS) + ")" + part, _day_word),
        (r"tonight|last\s+night|this\s+" + _PART, _this_part),
        (r"(?:" + _relation("on", "past") + r"\s+)?" + _WEEKDAY + part, _weekday),
        (
            _relation("in", "during", "since", "past")
            + r"\s+"
            + _MONTH
            + r"(?!,?\s*(?:of\s+)?\d)",  # "in May 2023" is the month of a year
            _named_month,
        ),
        (_MONTH + r",?\s+(?:of\s+)?" + _year_re(), _month_year),
        (r"(?:in|during|since|throughout|the\s+year)\s+" + _year_re(), _in_year),
        (_ISO, _iso),
        (
            r"(?P<which>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)"
            r"[\s-]*(?:"
            + _MONTH
            + r"(?:,?\s+"
            + _year_re()
            + r")?|"
            + _year_re("only_year")
            + ")",
            _third,
        ),
        (
            r"(?:"
            + _relation("in", "during", "over", "past")
            + r"\s+)?(?:the\s+)?"
            + _SEASON
            + r"(?:\s+(?:of\s+)?"
            + _year_re()
            + ")?",
            _season,
        ),
        (_num_re() + r"\s+hours?\s+(?:ago|back)", _hours_ago),
        (
            r"(?:the|in|over|during|within|for)\s+(?:past|last)\s+(?:"
            + _num_re()
            + r"\s+)?hours?"
            + _NOT_OF,
            _past_hours,
        ),
        (r"(?:over|at|during|on)\s+the\s+weekend", _the_weekend),
        (
            r"(?:"
            + _relation("at", "on", "over", "during", "around", "since", "past")
            + r"\s+)?"
            + _HOLIDAY
            + r"(?:\s+(?:of\s+)?"
            + _year_re()
            + ")?",
            _holiday,
        ),
        # "March of last year", "the summer of next year", "Friday of last week"
        (
            r"(?:the\s+)?(?:"
            + _MONTH
            + "|"
            + _SEASON
            + r")\s+(?:of\s+)?"
            + _OF_RELATION
            + r"\s+year",
            _of_relative,
        ),
        (_WEEKDAY + r"\s+(?:of\s+)?" + _OF_RELATION + r"\s+week", _of_relative),
        (r"the\s+other\s+day", _other_day),
        (r"earlier\s+(?:today|this\s+(?P<unit>week|month|year))", _earlier),
    ]
    what = "(?P<what>week|weekend|day|" + _alternatives(_WEEKDAYS) + ")"
    for date_form in _DATES:
        table.append((r"(?:" + _WEEKDAY + r",?\s+)?" + date_form, _on_date))
        table.append(
            (
                r"(?:the\s+|last\s+)?"
                + what
                + r"\s+(?P<dir>before|after|of)\s+"
                + date_form,
                _anchored,
            )
        )
    return [
        (
            re.compile(r"(?<!\w)(?:" + pattern + r")(?!\w)", re.IGNORECASE),
            resolve,
            _CUES[resolve],
        )
        for pattern, resolve in table
    ]


_DIGITS: Final = tuple("0123456789")
# Every match of a rule holds one of its cues (tests/test_when.py checks it), so
# a rule whose cues are all absent from the lowered message is not run: most
# messages skip most rules ("the invoice report is slow" runs none), and a
# substring test costs a small part of a case-insensitive regex scan.
_CUES: Final[dict[_Resolver, tuple[str, ...]]] = {
    _ago: ("ago", "back"),
    _compound: ("ago", "back", "now"),
    _ahead: ("now", "time"),
    _rolling: ("past", "last", "previous"),
    _relative_unit: ("week", "month", "year"),
    _two_away: ("last", "next"),
    _day_word: ("today", "yesterday", "tomorrow"),
    _this_part: ("night", "morning", "afternoon", "evening"),
    _weekday: ("day",),
    _named_month: ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                   "oct", "nov", "dec"),
    _month_year: _DIGITS,
    _in_year: _DIGITS,
    _iso: _DIGITS,
    _third: ("early", "mid", "late", "beginning", "start", "end"),
    _season: ("spring", "summer", "autumn", "fall", "winter"),
    _hours_ago: ("hour",),
    _past_hours: ("hour",),
    _the_weekend: ("weekend",),
    _holiday: ("christmas", "boxing", "halloween", "thanksgiving", "easter", "july",
               "independence", "year", "valentine"),
    _of_relative: ("year", "week"),
    _other_day: ("other",),
    _earlier: ("earlier",),
    _on_date: _DIGITS,
    _anchored: _DIGITS,
}  # fmt: skip
_ALL_CUES: Final = frozenset(cue for cues in _CUES.values() for cue in cues)
_RULES: Final = _rules()


# --- the scan --------------------------------------------------------------


def windows(message: str, now: datetime) -> list[Window]:
    """Every time expression in ``message``, each with its window, in order.

    Expressions that overlap keep the longest (the earlier on a tie).

    Raises:
        TypeError: ``message`` is not a str, or ``now`` not a datetime.
    """
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    ctx = _context(now)
    chosen = _longest_first(_candidates(message, ctx))
    chosen = [_since(message, item, ctx) for item in chosen]
    return [
        Window(start=s[0], end=s[1], spans=((b, e),), phrases=(message[b:e],))
        for b, e, s in chosen
        if s is not None
    ]


# (begin, end, window); no window where the words name a date that does not exist.
_Found = tuple[int, int, Optional[_Span]]


def _candidates(message: str, ctx: _Now) -> list[_Found]:
    """Every rule's matches with their windows, overlapping ones included."""
    lowered = message.lower()
    present = {cue for cue in _ALL_CUES if cue in lowered}
    found: list[_Found] = []
    for pattern, resolve, cues in _RULES:
        if present.isdisjoint(cues):
            continue
        for m in pattern.finditer(message):
            if not _plain(m.group(0)):
                continue
            try:
                span = resolve(m, ctx)
            except (OverflowError, ValueError):
                # No such date ("30 February 2023") or none in years 1-9999:
                # the words still claim their place, so that "February 2023"
                # inside them is not read instead.
                found.append((m.start(), m.end(), None))
                continue
            if span is not None and span[0] < span[1]:
                found.append((m.start(), m.end(), span))
    return found


def _longest_first(found: list[_Found]) -> list[_Found]:
    """The matches that overlap no longer (or equal and earlier) one, in order.

    Taken longest first (the earlier on a tie, then the earlier rule), each
    kept unless it overlaps one kept before. A kept match is at least as
    long, so it cannot lie strictly inside the one at hand: they overlap
    exactly when the one at hand's first or last character is claimed.
    Each kept match claims its characters once (kept matches are disjoint),
    so the cost is the sort's, O(n log n), plus O(len(message)); comparing
    every pair was O(n^2): 8.4 s for "yesterday " * 12000 (issue 48).
    """
    ordered = sorted(found, key=lambda f: (f[0] - f[1], f[0]))
    claimed = bytearray(max((f[1] for f in found), default=0))
    chosen: list[_Found] = []
    for item in ordered:
        begin, end = item[0], item[1]
        if claimed[begin] or claimed[end - 1]:
            continue
        claimed[begin:end] = b"\x01" * (end - begin)
        chosen.append(item)
    return sorted(chosen, key=lambda f: f[0])


_SINCE: Final = re.compile(r"(?<!\w)since\s+\Z", re.IGNORECASE)


def _since(message: str, item: _Found, ctx: _Now) -> _Found:
    """Stretch "since X" from X's start to now (or to X's end, if later)."""
    begin, end, span = item
    if span is None or span[0] > ctx.now:
        return item
    since = _SINCE.search(message, max(0, begin - 16), begin)
    if since is not None:
        begin = since.start()
    elif not message[begin:end].lower().startswith("since"):
        return item
    return begin, end, (span[0], max(span[1], ctx.now))


def _plain(text: str) -> bool:
    """ASCII but for spaces and the typographic apostrophe: the vocabulary is
    English, and case-insensitive matching would otherwise let a long s or the
    Kelvin sign spell a word."""
    return text.isascii() or all(
        c.isascii() or c.isspace() or c == "\u2019" for c in text
    )


def _context(now: datetime) -> _Now:
    """Check ``now``; a naive one is read as UTC."""
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime, got {type(now).__name__}")
    if now.tzinfo is None or now.utcoffset() is None:
        now = now.replace(tzinfo=timezone.utc)
    assert now.tzinfo is not None
    return _Now(now=now, today=now.date(), tz=now.tzinfo)
