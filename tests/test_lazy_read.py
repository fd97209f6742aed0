"""The lazy read (README "Errors"): content and cost are read when retrieval
reaches an entry, so an unreadable one fails the call only then; validate
reads every entry."""

import sys

import pytest
from conftest import NOW

from poolsplit import Pool, retrieve, retrieve_pools, validate


class Unreadable:
    def __init__(self, error=ValueError):
        self.error = error

    def __str__(self):
        raise self.error("cannot become text")


def ids(entries):
    return [e["id"] for e in entries]


def far_store(content):
    """The bad entry ranks third; a one-entry pool fills at the first."""
    return [
        {"id": "a", "base_priority": 9, "content": "alpha"},
        {"id": "c", "base_priority": 5, "content": "gamma"},
        {"id": "b", "base_priority": 1, "content": content},
    ]


@pytest.mark.parametrize("error", [TypeError, ValueError])
@pytest.mark.parametrize("context", [None, {"message": "alpha gamma"}])
def test_an_entry_never_reached_is_not_read(error, context):
    got = retrieve(far_store(Unreadable(error)), Pool("p", 100, 1), context, now=NOW)
    assert ids(got) == ["a"]


@pytest.mark.parametrize("error", [TypeError, ValueError])
@pytest.mark.parametrize("context", [None, {"message": "alpha gamma"}])
def test_an_entry_reached_fails_the_call_naming_it(error, context):
    with pytest.raises(error, match=r"^entries\[2\] \(id='b'\): cannot become text$"):
        retrieve(far_store(Unreadable(error)), Pool("p", 100, 3), context, now=NOW)


def test_a_counter_returning_a_float_fails_only_for_an_entry_reached():
    def counter(text):
        return 2.5 if text == "bad" else 1

    store = far_store("bad")
    got = retrieve(store, Pool("p", 100, 1), now=NOW, token_counter=counter)
    assert ids(got) == ["a"]
    with pytest.raises(
        TypeError,
        match=r"^token_counter must return an int, got float 2\.5 for entries\[2\] ",
    ):
        retrieve(store, Pool("p", 100, 3), now=NOW, token_counter=counter)


def test_a_later_pool_reaching_the_entry_fails_the_call():
    pools = [Pool("first", 100, 1), Pool("second", 100, 5)]
    with pytest.raises(ValueError, match=r"^entries\[2\] "):
        retrieve_pools(far_store(Unreadable()), pools, now=NOW)


@pytest.mark.parametrize("context", [None, {"message": "alpha"}])
def test_an_entry_only_another_pool_admits_is_not_read_by_this_one(context):
    """The bad entry ranks first but is of type b; its pool is full at once
    (no entries), so no pool reaches it, and pool a passes over it unread."""
    store = [
        {"id": "b", "type": "b", "base_priority": 9, "content": Unreadable()},
        {"id": "a", "type": "a", "content": "alpha"},
    ]
    pools = [Pool("a", 100, 5, types=["a"]), Pool("b", 100, 0, types=["b"])]
    got = retrieve_pools(store, pools, context, now=NOW)
    assert {name: ids(chosen) for name, chosen in got.items()} == {"a": ["a"], "b": []}


def test_validate_reads_every_content():
    problems = validate(far_store(Unreadable(TypeError)), now=NOW)
    assert [(p.index, p.severity, p.field, p.message) for p in problems] == [
        (2, "warning", "content", "content should be a str, got Unreadable"),
        (
            2,
            "error",
            "content",
            "cannot become text: cannot become text; a call that reaches this "
            "entry fails",
        ),
    ]


# --- content that cannot become text -------------------------------------------


UNPRINTABLE = 10**5000  # str() raises ValueError past the int digit limit


class _TypeErrorText:
    def __str__(self):
        raise TypeError("no text")


@pytest.mark.parametrize("token_count", [None, 5])
def test_content_that_cannot_become_text_names_the_entry(token_count):
    """Whether str(content) fails while counting tokens or while matching the
    message, the error names the entry (token_count 5 skips the counting)."""
    store = [{"id": "b", "content": _TypeErrorText(), "token_count": token_count}]
    with pytest.raises(TypeError, match=r"^entries\[0\] \(id='b'\): no text$"):
        retrieve(store, Pool("p", 100, 1), {"message": "deploy"}, now=NOW)


@pytest.mark.skipif(
    not hasattr(sys, "set_int_max_str_digits"), reason="no int digit limit"
)
def test_unprintable_content_of_a_tied_entry_is_an_error():
    """A content that cannot become text fails the call, naming the entry,
    when retrieval reaches the entry (README, the lazy read): here it ties
    with the entry taken, so it is ranked and costed before the pool fills."""
    store = [
        {"id": "a", "content": "deploy", "base_priority": 5},
        {"id": "b", "content": UNPRINTABLE, "base_priority": 5},
    ]
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='b'\): "):
        retrieve(store, Pool("p", 100, 1), now=NOW)


@pytest.mark.skipif(
    not hasattr(sys, "set_int_max_str_digits"), reason="no int digit limit"
)
def test_unprintable_tag_is_an_error_without_context_tags():
    """A tag that cannot become text fails whether or not the context has tags."""
    store = [{"id": "a", "base_priority": 5}, {"id": "b", "tags": [UNPRINTABLE]}]
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='b'\): "):
        retrieve(store, Pool("p", 100, 1), None, now=NOW)


def kept_aside_store(size, content):
    """A (priority 20, ``content``) first, then ``size - 1`` entries: every
    16th of the first 4,800 too costly for any pool (priority 10), the others
    unreadable at priority 1."""
    store = [{"id": "A", "base_priority": 20, "content": content}]
    for i in range(1, size):
        if i % 16 == 0 and i < 16 * 300:
            store.append({"id": f"c{i}", "base_priority": 10, "token_count": 10**6})
        else:
            store.append({"id": f"r{i}", "base_priority": 1, "content": Unreadable()})
    return store


def test_a_pool_full_before_the_lower_entries_never_reads_them():
    """The pool takes A (20), passes over the entries at 10 (too costly for
    its room) and is full: the entries at 1 are never read, so an unreadable
    content among them does not fail the call (README, the lazy read)."""

    store = kept_aside_store(17_000, "a")
    assert ids(retrieve(store, Pool("p", 100, 1), now=NOW)) == ["A"]
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='r1'\): cannot"):
        retrieve(store, Pool("p", 100, 2), now=NOW)


def test_an_entry_too_costly_for_the_pool_is_passed_over_unread_even_in_a_tie():
    """Fifty entries tie with A on their first score, each with a token_count
    beyond the pool's room and a content that cannot become text. The message
    term (their content) would only rank entries the pool cannot take, so they
    are passed over unscored: A is taken, the pool is full and none of them
    is read, though the run holds fifty entries past the last one taken, not
    the few the engine may read to rank exactly (README, the lazy read)."""
    store = [
        {"id": f"z{i:02d}", "content": Unreadable(), "token_count": 10**6}
        for i in range(50, 0, -1)
    ]
    store.append({"id": "a", "content": "alpha"})
    got = retrieve(store, Pool("p", 100, 1), {"message": "alpha"}, now=NOW)
    assert ids(got) == ["a"]
    # The same store with room for them: their turn comes, and the first in
    # input order fails the call.
    with pytest.raises(ValueError, match=r"^entries\[0\] \(id='z50'\): cannot"):
        retrieve(store, Pool("p", 10**7, 2), {"message": "alpha"}, now=NOW)


def test_a_callers_counter_is_not_called_for_a_tied_entry_never_reached():
    """a and b tie on their first score; the message boosts a, which fills
    the pool. b is scored to rank the run but never costed, so a counter that
    fails on its text is never called for it (README, the lazy read)."""

    def counter(text):
        if text == "beta":
            raise LookupError("counted an entry never reached")
        return 1

    store = [{"id": "b", "content": "beta"}, {"id": "a", "content": "alpha"}]
    got = retrieve(
        store, Pool("p", 100, 1), {"message": "alpha"}, token_counter=counter, now=NOW
    )
    assert ids(got) == ["a"]


def test_an_unreadable_entry_past_the_room_a_take_left_is_not_read():
    """A takes 8 of the pool's 10 tokens; B ranks below it and costs 5, more
    than the 2 left, so it is passed over unread though the pool's whole
    budget would hold it (README, the lazy read)."""
    store = [
        {"id": "a", "content": "deploy", "base_priority": 9, "token_count": 8},
        {"id": "b", "content": Unreadable(), "base_priority": 1, "token_count": 5},
    ]
    got = retrieve(store, Pool("p", 10, 5), {"message": "deploy"}, now=NOW)
    assert ids(got) == ["a"]
