"""The lazy read (README "Errors"): content and cost are read when retrieval
reaches an entry, so an unreadable one fails the call only then; validate
reads every entry."""

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
