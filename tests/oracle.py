"""A deliberately plain, slow model of retrieve/retrieve_pools, from README.md.

Every rule here is written again from the README (the API section, the entry
schema table and the tie-break paragraph), not taken from the library, so a
wrong rule in ``poolsplit.py`` shows up as a disagreement. From poolsplit it
imports only the public ``Pool`` (a plain value) and ``STOPWORDS`` (the
README names that list rather than spelling it out).

Where the README leaves the exact float open, the score is computed as
``priority * recency * tags * project * message``, left to right, each factor
as the README writes it, and an instant is its POSIX seconds as a float.

The relevance floor is the pool's ``min_score``: with
None nothing changes; otherwise a context entry scoring below it is not taken
by that pool (it stays available to later pools); always-scope entries ignore
it; a score equal to the floor is taken.

``check_invariants`` is the one invariant check the property, stateful and
regression tests share.
"""

import copy
import math
import numbers
import re
import unicodedata
from collections.abc import Mapping
from datetime import date, datetime, timezone
from fractions import Fraction
from functools import lru_cache

from poolsplit import STOPWORDS, Pool

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SECONDS_PER_DAY = 86400.0


# --- Reading the fields (README "Entry schema") ---------------------------


def content_of(entry):
    """Missing or None is "", any other non-str is its str()."""
    content = entry.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return str(content)


def type_of(entry):
    """Default "note", also for None."""
    kind = entry.get("type")
    return "note" if kind is None else kind


def admits(pool, entry):
    """types=None takes every type; a non-str type matches only types=None."""
    if pool.types is None:
        return True
    kind = type_of(entry)
    return isinstance(kind, str) and kind in pool.types


def is_always(entry):
    return entry.get("scope") == "always"


def oracle_is_active(entry):
    """status "active" or missing/None, and superseded_by not truthy."""
    status = entry.get("status")
    if status is not None and status != "active":
        return False
    return not entry.get("superseded_by")


def oracle_token_counter(text):
    return max(1, len(text) // 4)


def oracle_cost(entry, token_counter=oracle_token_counter):
    """A positive int token_count (not bool), else the counter; never below 1."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return int(count)
    counted = token_counter(content_of(entry))
    if isinstance(counted, bool) or not isinstance(counted, int):
        raise TypeError(f"token_counter returned {type(counted).__name__}")
    return max(1, int(counted))


def as_float(number):
    """A real number as a float; one beyond the float range is +-inf."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


# --- created: ISO-8601 strings, datetime, date, POSIX seconds --------------

# README "Timestamps": after str.strip(), in full:
#   date [sep time] [ws] [offset]; sep is T, t or one space; time hh:mm with
#   optional :ss and a . or , fraction of any length (cut to 6 digits); ws is
#   ASCII whitespace; offset Z, z, or a sign, two digits and optionally two
#   more (with or without a colon). Digits are ASCII.
ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"[ \t\n\r\f\v]*"
    r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?",
    re.ASCII,
)


@lru_cache(maxsize=65536)  # pure: memoised only to keep the suite quick
def iso_seconds(text):
    """POSIX seconds (float) of a string of the README's grammar, or None."""
    match = ISO.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, _, sign, oh, om = match.groups()
    try:
        midnight = datetime(int(year), int(month), int(day), tzinfo=timezone.utc)
    except ValueError:  # February 30th, month 13, year 0
        return None
    hour, minute, second = int(hour or 0), int(minute or 0), int(second or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    delta = midnight - EPOCH
    exact = Fraction(delta.days * 86400 + hour * 3600 + minute * 60 + second)
    if fraction:  # cut, not rounded, to microseconds
        exact += Fraction(int(fraction[:6]), 10 ** len(fraction[:6]))
    if sign:  # the written time minus sign x (hh hours + mm minutes)
        offset = int(oh) * 3600 + int(om or 0) * 60
        exact -= offset if sign == "+" else -offset
    return float(exact)


def created_seconds(value):
    """POSIX seconds of a ``created`` value, or None when it means "no decay".

    A datetime that is naive is UTC; a date is its UTC midnight; an int or
    float (not bool) is POSIX seconds; anything else, or a non-finite number,
    has no instant.
    """
    if isinstance(value, str):
        return iso_seconds(value)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=timezone.utc)
        return (value - EPOCH).total_seconds()
    if isinstance(value, date):
        midnight = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
        return (midnight - EPOCH).total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = as_float(value)
        return seconds if math.isfinite(seconds) else None
    return None


# --- Tie keys (README, the paragraph after the schema table) ---------------


def created_key(entry):
    """Missing first, then by instant (oldest first), then unparseable values.

    Two forms of one instant tie; every value with no instant ties with
    every other, so the next key decides.
    """
    value = entry.get("created")
    if value is None:
        return (0, 0.0)
    seconds = created_seconds(value)
    if seconds is None:
        return (2, 0.0)
    return (1, seconds)


def id_key(entry):
    """Missing as "", strings, numbers by exact value, then anything else
    (all equal).

    bool is not a number here, as everywhere in the README (token_count,
    base_priority, POSIX seconds). Numbers compare by exact value.
    """
    value = entry.get("id")
    if value is None:
        return (0, "")
    if isinstance(value, str):
        return (0, value)
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    ):
        return (1, value)
    return (2, 0)


# --- The default scorer (README "default_scorer") --------------------------


@lru_cache(maxsize=4096)  # pure: memoised only to keep the suite quick
def significant_words(text):
    """Lowercase letter/digit runs of 3+ chars (NFC), minus STOPWORDS."""
    text = unicodedata.normalize("NFC", text).lower()
    words = set()
    run = []
    for char in [*text, " "]:
        if char.isalnum():
            run.append(char)
            continue
        if len(run) >= 3:
            words.add("".join(run))
        run = []
    return frozenset(words - STOPWORDS)


def tag_set(value, where):
    """A list, tuple, set or frozenset (items str() when not str), or a bare
    str as one tag. None is "no tags" (missing); any other type, even a falsy
    0, raises TypeError.
    """
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    if isinstance(value, (list, tuple, set, frozenset)):
        return {item if isinstance(item, str) else str(item) for item in value}
    raise TypeError(f"{where} must be a list of str or a str, got {type(value)}")


def priority_of(entry):
    value = entry.get("base_priority")
    if value is None:
        return 5.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"base_priority must be a real number, got {value!r}")
    priority = as_float(value)
    if math.isnan(priority):
        raise ValueError("base_priority must not be NaN")
    return priority


def resolve_now(now):
    if now is None:
        return datetime.now(timezone.utc)
    if now.tzinfo is None or now.utcoffset() is None:
        return now.replace(tzinfo=timezone.utc)
    return now


def check_context(context):
    if context is None:
        return {}
    if not isinstance(context, Mapping):
        raise TypeError(f"context must be a Mapping or None, got {type(context)}")
    message = context.get("message")
    if message is not None and not isinstance(message, str):
        raise TypeError("context['message'] must be a str or None")
    return context


def oracle_score(entry, context=None, *, now=None):
    """base_priority x recency x tags x project x message, as in the README."""
    context = check_context(context)
    now_seconds = (resolve_now(now) - EPOCH).total_seconds()
    priority = priority_of(entry)

    seconds = created_seconds(entry.get("created"))
    if seconds is None:
        recency = 1.0
    else:
        age = (now_seconds - seconds) / SECONDS_PER_DAY
        days = age if age > 0 else 0.0
        recency = max(0.3, 1 - 0.7 * days / 90)

    tags = tag_set(entry.get("tags"), "tags")
    if tags:
        wanted = tag_set(context.get("tags"), "context['tags']")
        tag_factor = 1 + 0.5 * (len(tags & wanted) / len(tags))
    else:
        tag_factor = 1.0

    project = entry.get("project")
    if project is None:
        project_factor = 1.0
    elif project == context.get("project"):
        project_factor = 1.5
    else:
        project_factor = 0.5

    message_words = significant_words(context.get("message") or "")
    message_factor = 1.0
    if message_words:
        found = message_words & significant_words(content_of(entry))
        overlap = len(found) / len(message_words)
        if overlap > 0.15:
            message_factor = 1 + 1.5 * overlap

    return priority * recency * tag_factor * project_factor * message_factor


def checked_score(value):
    """A scorer's result as a float: a real number (not bool), not NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"scorer must return a real number, got {value!r}")
    score = as_float(value)
    if math.isnan(score):
        raise ValueError("scorer returned NaN")
    return score


# --- retrieve / retrieve_pools (README "retrieve", "retrieve_pools") --------


class OracleError(Exception):
    """The call must fail; ``types`` are the exception types it may raise.

    The README does not order the checks of different entries, so when
    several entries are bad, any of their errors is a right answer.

    With ``result`` set, the call MAY fail: entries at ``unread`` have a
    content or cost that cannot be read, and the README reads those lazily
    (only when retrieval reaches the entry). The call then either raises one
    of ``types`` naming one of them, or returns ``result``: had it reached
    one, it would have failed, so none of them was in the way of the picks.
    """

    def __init__(self, types, result=None, unread=()):
        super().__init__(sorted(t.__name__ for t in types))
        self.types = tuple(types)
        self.result = result
        self.unread = tuple(unread)


def lazy_failure(entry, context, scorer, token_counter):
    """README "Errors", the lazy read: the error type that reading this
    context entry's content (for the message term, default scorer only) or its
    cost raises, or None. Retrieval reads them only when it reaches it."""
    message = check_context(context).get("message") or ""
    try:
        if scorer is None and significant_words(message):
            content_of(entry)
        oracle_cost(entry, token_counter)
    except (TypeError, ValueError) as exc:
        return type(exc)
    return None


def checked_call(entries, pools, context, now):
    """The call's pools, store and now; OracleError for what must fail first."""
    pools = list(pools)
    names = [pool.name for pool in pools]
    if len(set(names)) != len(names):
        raise OracleError([ValueError])
    for pool in pools:
        if not isinstance(pool, Pool):
            raise OracleError([TypeError])
    try:
        check_context(context)
    except TypeError:
        raise OracleError([TypeError]) from None
    now = resolve_now(now)
    store = list(entries)
    if not all(isinstance(entry, Mapping) for entry in store):
        raise OracleError([TypeError])
    return pools, store, now


def oracle_fill(pool, store, candidates, scores, unread, token_counter):
    """One pool's positions from its candidates (live, admitted, not taken
    by an earlier pool): always-scope first, then the greedy fill."""
    floor = pool.min_score
    always = [i for i in candidates if is_always(store[i])]
    ranked = sorted(
        (i for i in candidates if not is_always(store[i])),
        key=lambda i: (-scores[i], created_key(store[i]), id_key(store[i]), i),
    )
    chosen = list(always)
    used = 0
    count = 0
    for index in ranked:
        if index in unread or (floor is not None and scores[index] < floor):
            continue
        cost = oracle_cost(store[index], token_counter)
        if count < pool.max_entries and used + cost <= pool.max_tokens:
            chosen.append(index)
            used += cost
            count += 1
    return chosen


def oracle_retrieve_pools(
    entries,
    pools,
    context=None,
    *,
    scorer=None,
    token_counter=oracle_token_counter,
    is_active=oracle_is_active,
    now=None,
):
    """The README's selection; raises OracleError when the call must fail.

    ``scorer=None`` means the README's default scorer. Errors raised by a
    caller's hook are not modelled (they propagate, tested separately).
    """
    pools, store, now = checked_call(entries, pools, context, now)

    # One object listed twice is one entry, at its first position.
    first = {}
    for index, entry in enumerate(store):
        first.setdefault(id(entry), index)
    live = [
        index
        for index, entry in enumerate(store)
        if first[id(entry)] == index and is_active(entry)
    ]

    # Every active context entry some pool admits is scored, once. One whose
    # content or cost cannot be read is scored without its content (its other
    # fields are read eagerly) and set aside: it fails the call if reached.
    scores = {}
    errors = []
    unread = {}
    for index in live:
        entry = store[index]
        if is_always(entry) or not any(admits(pool, entry) for pool in pools):
            continue
        failure = lazy_failure(entry, context, scorer, token_counter)
        if failure is not None:
            unread[index] = failure
            entry = {key: value for key, value in entry.items() if key != "content"}
        try:
            if scorer is None:
                scores[index] = oracle_score(entry, context, now=now)
            else:
                scores[index] = checked_score(scorer(store[index], context, now=now))
        except (TypeError, ValueError) as exc:
            errors.append(type(exc))
    if errors:
        raise OracleError(set(errors))

    taken = set()
    results = {}
    for pool in pools:
        candidates = [i for i in live if i not in taken and admits(pool, store[i])]
        chosen = oracle_fill(pool, store, candidates, scores, unread, token_counter)
        taken.update(chosen)
        results[pool.name] = [store[i] for i in chosen]
    if unread:
        raise OracleError(set(unread.values()), results, sorted(unread))
    return results


def oracle_retrieve(entries, pool, context=None, **hooks):
    return oracle_retrieve_pools(entries, [pool], context, **hooks)[pool.name]


# --- The one invariant check -------------------------------------------------


def snapshot(store):
    """What check_invariants compares against: a deep copy and the identities."""
    return copy.deepcopy(store), [id(entry) for entry in store]


def check_invariants(
    store,
    pools,
    context,
    result,
    *,
    before,
    scorer=None,
    token_counter=oracle_token_counter,
    is_active=oracle_is_active,
    now=None,
):
    """Assert every invariant the README and the docstrings state.

    ``before`` is ``snapshot(store)`` taken before the call. ``scorer`` (None
    for the default) is only called when some pool has a ``min_score``.
    """
    copied, identities = before
    pools = list(pools)
    # Keys are the pool names, in pool order; each value is a list.
    assert list(result) == [pool.name for pool in pools]
    inputs = {id(entry): entry for entry in store}
    seen = set()
    for pool in pools:
        chosen = result[pool.name]
        assert isinstance(chosen, list)
        for entry in chosen:
            # Identity: the input objects themselves, never copies.
            assert inputs.get(id(entry)) is entry
            # Disjoint: each object in at most one pool.
            assert id(entry) not in seen
            seen.add(id(entry))
            assert is_active(entry)
            assert admits(pool, entry)
        always = [entry for entry in chosen if is_always(entry)]
        rest = chosen[len(always) :]
        # Always-scope first, in input order; then only context entries.
        assert all(a is b for a, b in zip(chosen, always))
        assert not any(is_always(entry) for entry in rest)
        order = {}
        for index, entry in enumerate(store):
            order.setdefault(id(entry), index)
        positions = [order[id(entry)] for entry in always]
        assert positions == sorted(positions)
        # Caps, by the README's cost.
        assert len(rest) <= pool.max_entries
        assert sum(oracle_cost(entry, token_counter) for entry in rest) <= (
            pool.max_tokens
        )
        floor = pool.min_score
        if floor is not None:
            for entry in rest:
                if scorer is None:
                    score = oracle_score(entry, context, now=now)
                else:
                    score = checked_score(scorer(entry, context, now=resolve_now(now)))
                assert score >= floor
    # Every active always-scope entry some pool admits is in the first such pool.
    for entry in store:
        if is_always(entry) and is_active(entry):
            home = next((pool for pool in pools if admits(pool, entry)), None)
            if home is not None:
                assert any(e is entry for e in result[home.name])
    # Nothing modified: not the entries, not the list.
    assert [id(entry) for entry in store] == identities
    assert store == copied


def ids(result):
    """A result by identity, for comparing two results."""
    return {name: [id(entry) for entry in chosen] for name, chosen in result.items()}
