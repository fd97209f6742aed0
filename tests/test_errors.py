"""Errors carry their facts: position, id and field as attributes, not text.

The command line maps a position to a line through these attributes; ids that
contain ``entries[N]`` or ``contexts[N]`` once broke its message rewriting.
"""

import json
import pickle
import warnings
from datetime import datetime, timezone, tzinfo

import pytest

import poolsplit
from poolsplit import (
    ContextError,
    EntryError,
    EntryTypeError,
    EntryValueError,
    Pool,
    PoolsplitWarning,
    audit,
    default_scorer,
    main,
    retrieve,
    retrieve_pools,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Unprintable:
    def __init__(self, error):
        self.error = error

    def __str__(self):
        raise self.error


def raised(entries, **options):
    """The error retrieve raises for ``entries`` (the message needs content)."""
    with pytest.raises((TypeError, ValueError)) as caught:
        retrieve(entries, Pool("p", 99, 9), {"message": "word"}, now=NOW, **options)
    return caught.value


@pytest.mark.parametrize(
    ("entries", "options", "kind", "facts"),
    [
        (
            [{}, {"id": "b", "base_priority": "hi"}],
            {},
            EntryTypeError,
            (1, "b", "base_priority"),
        ),
        (
            [{"id": "n", "base_priority": float("nan")}],
            {},
            EntryValueError,
            (0, "n", "base_priority"),
        ),
        ([{"id": 7, "tags": 5}], {}, EntryTypeError, (0, 7, "tags")),
        (
            [{}, {}, {"content": Unprintable(TypeError("no"))}],
            {},
            EntryTypeError,
            (2, None, "content"),
        ),
        (
            [{"id": "v", "content": Unprintable(ValueError("no"))}],
            {},
            EntryValueError,
            (0, "v", "content"),
        ),
        ([{}, "x"], {}, EntryTypeError, (1, None, None)),
        (
            [{"id": "s"}],
            {"scorer": lambda e, c, *, now: "1"},
            EntryTypeError,
            (0, "s", None),
        ),
        (
            [{"id": "s"}],
            {"scorer": lambda e, c, *, now: float("nan")},
            EntryValueError,
            (0, "s", None),
        ),
        (
            [{"id": "c"}],
            {"token_counter": lambda text: 1.5},
            EntryTypeError,
            (0, "c", None),
        ),
    ],
)
def test_an_entry_error_carries_position_id_and_field(entries, options, kind, facts):
    error = raised(entries, **options)
    assert type(error) is kind
    assert isinstance(error, EntryError)
    assert (error.index, error.entry_id, error.field) == facts
    assert f"entries[{facts[0]}]" in str(error)


def test_the_content_error_keeps_the_original_failure_as_its_cause():
    failure = ValueError("cannot")
    error = raised([{"id": "u", "content": Unprintable(failure)}])
    assert error.__cause__ is failure
    assert str(error) == "entries[0] (id='u'): cannot"


class ChainedText:
    """A value whose str() fails with an error that has its own cause, as a
    wrapper that re-raises does."""

    def __init__(self, failure):
        self.failure = failure

    def __str__(self):
        raise self.failure from LookupError("the wrapper's own cause")


@pytest.mark.parametrize("field", ["content", "tags"])
def test_the_cause_is_the_values_own_failure_even_when_that_has_a_cause(field):
    """The entry error's ``__cause__`` is the exception the value raised, not
    that exception's own cause, whichever field failed."""
    failure = ValueError("cannot")
    value = ChainedText(failure)
    error = raised([{"id": "u", field: [value] if field == "tags" else value}])
    facts = (type(error), error.index, error.entry_id, error.field)
    assert facts == (EntryValueError, 0, "u", field)
    assert error.__cause__ is failure


class ChainedReal(float):
    """A real number (a float subclass) whose float() fails with an error
    that has its own cause; the readers do not wrap that failure themselves."""

    def __float__(self):
        raise ValueError("no float") from LookupError("the wrapper's own cause")


def test_a_raw_failure_with_its_own_cause_stays_the_cause():
    """A failure no reader wrapped (here float() of a priority) is itself the
    entry error's ``__cause__``, not the cause it carries."""
    error = raised([{"id": "u", "base_priority": ChainedReal(3.0)}])
    facts = (type(error), error.index, error.entry_id, error.field)
    assert facts == (EntryValueError, 0, "u", "base_priority")
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == "no float"


def test_an_unreached_entry_reads_its_content_when_ranked():
    # the walk reaches the entry only after sorting (exact score, lazy read)
    store = [{"id": f"e{i}", "content": "word"} for i in range(3)]
    store.append({"id": "bad", "base_priority": 9, "content": Unprintable(TypeError())})
    error = raised(store)
    assert (error.index, error.entry_id, error.field) == (3, "bad", "content")


def test_default_scorer_on_one_entry_has_no_position():
    with pytest.raises(EntryTypeError) as caught:
        default_scorer({"id": "a", "base_priority": []}, None, now=NOW)
    error = caught.value
    assert (error.index, error.entry_id, error.field) == (None, "a", "base_priority")
    assert str(error).startswith("entry (id='a'): base_priority must be")


def test_errors_pickle_with_their_facts():
    error = raised([{"id": "b", "base_priority": "hi"}])
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy)) == (EntryTypeError, str(error))
    assert (copy.index, copy.entry_id, copy.field) == (0, "b", "base_priority")


@pytest.mark.parametrize(
    ("context", "field"),
    [("no", None), ({"message": 5}, "message"), ({"tags": 5}, "tags")],
)
def test_a_context_error_names_the_field(context, field):
    with pytest.raises(ContextError) as caught:
        retrieve_pools([], [Pool("p", 1, 1)], context, now=NOW)
    assert (caught.value.index, caught.value.field) == (None, field)
    with pytest.raises(ContextError) as caught:
        audit([{}], [Pool("p", 1, 1)], [None, {}, context], now=NOW)
    assert (caught.value.index, caught.value.field) == (2, field)
    assert str(caught.value).startswith("contexts[2]: ")


def test_the_warning_carries_every_position_it_is_about():
    lost = {"id": "c", "type": "x", "scope": "always"}
    store = [lost, {"id": "t"}, {"id": "d", "type": "y", "scope": "always"}, lost]
    with pytest.warns(PoolsplitWarning) as caught:
        retrieve_pools(store, [Pool("t", 9, 9, ["note"])], now=NOW)
    assert caught[0].message.indices == (0, 2)  # the repeated object once
    assert PoolsplitWarning("plain").indices == ()


def test_the_classes_are_public():
    for name in ("EntryError", "EntryTypeError", "EntryValueError", "ContextError"):
        assert name in poolsplit.__all__
    assert issubclass(EntryTypeError, TypeError)
    assert issubclass(EntryValueError, ValueError)
    assert issubclass(ContextError, TypeError)


# The command line: ids that look like positions.


def cli(tmp_path, capsys, lines, pools):
    store = tmp_path / "s.jsonl"
    store.write_text(
        "".join(json.dumps(line) + "\n" if line else "\n" for line in lines)
    )
    pools_path = tmp_path / "p.json"
    pools_path.write_text(json.dumps(pools))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main(
            ["retrieve", str(store), "--pools", str(pools_path), "--now", "2026-01-01"]
        )
    out, err = capsys.readouterr()
    return status, out, err.replace(str(store), "s.jsonl")


TASKS = [{"name": "t", "max_tokens": 9, "max_entries": 9, "types": ["task"]}]


def test_an_id_naming_a_position_past_the_store(tmp_path, capsys):
    """It was rewritten as a position: IndexError, exit 1."""
    lines = [{"id": "see entries[3]", "type": "fix", "scope": "always", "content": "a"}]
    status, out, err = cli(tmp_path, capsys, lines, TASKS)
    assert (status, out) == (0, "")
    assert err == (
        "poolsplit: warning: s.jsonl:1: 1 active always-scope entries are in no "
        "pool, so they were not loaded: entries[0] (id='see entries[3]') of type "
        "'fix'; add their types to a pool, or add a pool with types=None\n"
    )


def test_an_id_naming_a_context(tmp_path, capsys):
    """It was read as audit's context: AssertionError, exit 1."""
    lines = [
        {"id": "t"},
        None,
        {"id": "contexts[0]", "type": "task", "base_priority": "x"},
    ]
    status, out, err = cli(tmp_path, capsys, lines, TASKS)
    assert (status, out) == (2, "")
    assert err == (
        "poolsplit: error: s.jsonl:3: entries[1] (id='contexts[0]'): "
        "base_priority must be a real number, got str 'x'\n"
    )


def test_an_id_naming_another_entry_is_not_rewritten(tmp_path, capsys):
    lines = [
        {"id": "a", "type": "task", "content": "x"},
        {"id": "dup of entries[0]", "type": "fix", "scope": "always"},
        {"id": "b", "type": "fix", "scope": "always"},
        {"id": "c", "type": "fix", "scope": "always"},
        {"id": "d", "type": "fix", "scope": "always"},
    ]
    status, out, err = cli(tmp_path, capsys, lines, TASKS)
    assert (status, out) == (0, "## t\n- [a] x\n")
    assert err == (
        "poolsplit: warning: s.jsonl:2: 4 active always-scope entries are in no "
        "pool, so they were not loaded: entries[1] (id='dup of entries[0]') of "
        "type 'fix', entries[2] (id='b') of type 'fix', entries[3] (id='c') of "
        "type 'fix' and 1 more; add their types to a pool, or add a pool with "
        "types=None (lines 2, 3, 4 and 1 more)\n"
    )


def test_a_warning_without_positions_names_the_file(tmp_path, capsys, monkeypatch):
    def warn(*args, **kwargs):
        warnings.warn(PoolsplitWarning("something"), stacklevel=1)
        return {}

    monkeypatch.setattr(poolsplit, "retrieve_pools", warn)
    status, _, err = cli(tmp_path, capsys, [{"id": "a"}], TASKS)
    assert (status, err) == (0, "poolsplit: warning: s.jsonl: something\n")


def test_an_error_without_position_names_the_file(tmp_path, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(poolsplit, "retrieve_pools", fail)
    status, _, err = cli(tmp_path, capsys, [{"id": "a"}], TASKS)
    assert (status, err) == (2, "poolsplit: error: s.jsonl: boom\n")


class BrokenOffset(tzinfo):
    """A tzinfo whose utcoffset() fails: the created value's own method."""

    def utcoffset(self, dt):
        raise ValueError("no offset")


def test_a_created_value_whose_own_method_fails_names_the_entry():
    failure_at = datetime(2025, 1, 1, tzinfo=BrokenOffset())
    error = raised([{}, {"id": "d", "created": failure_at}])
    assert (type(error), error.index, error.entry_id) == (EntryValueError, 1, "d")
    assert str(error) == "entries[1] (id='d'): no offset"
    assert isinstance(error.__cause__, ValueError)
