"""Pool validation and normalisation."""

import dataclasses

import pytest

from poolsplit import Pool


def test_minimal_pool_has_no_types():
    """types defaults to None (every type)."""
    assert Pool("p", 10, 2).types is None


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        (["a", "b"], ("a", "b")),
        (("a",), ("a",)),
        ({"x": 1}, ("x",)),
        (iter(["a", "a"]), ("a", "a")),
        ([], ()),
    ],
)
def test_types_normalised_to_tuple(types, expected):
    """Any iterable of str becomes a tuple."""
    assert Pool("p", 1, 1, types=types).types == expected


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"name": 3}, TypeError, r"^name must be a str, got int$"),
        ({"name": ""}, ValueError, r"^name must be a non-empty str, got ''$"),
        ({"max_tokens": -1}, ValueError, r"^max_tokens must be >= 0, got -1$"),
        ({"max_entries": -5}, ValueError, r"^max_entries must be >= 0, got -5$"),
        ({"max_tokens": True}, TypeError, r"^max_tokens must be an int, got bool$"),
        ({"max_entries": False}, TypeError, r"^max_entries must be an int, got bool$"),
        ({"max_tokens": 1.0}, TypeError, r"^max_tokens must be an int, got float$"),
        ({"max_entries": "3"}, TypeError, r"^max_entries must be an int, got str$"),
        ({"max_tokens": None}, TypeError, r"^max_tokens must be an int, got NoneType$"),
        (
            {"types": "skill"},
            TypeError,
            r"^types must be an iterable of str or None, got a bare str 'skill'; "
            r"write \['skill'\]$",
        ),
        (
            {"types": b"skill"},
            TypeError,
            r"^types must be an iterable of str or None, got a bare bytes",
        ),
        (
            {"types": 5},
            TypeError,
            r"^types must be an iterable of str or None, got int$",
        ),
        (
            {"types": ["a", 1]},
            TypeError,
            r"^types must contain only str, got int 1$",
        ),
    ],
)
def test_bad_fields_raise(kwargs, error, message):
    """Each bad field raises the documented error and message."""
    fields = {"name": "p", "max_tokens": 10, "max_entries": 2}
    fields.update(kwargs)
    with pytest.raises(error, match=message):
        Pool(**fields)


def test_zero_caps_allowed():
    """Zero budgets are valid."""
    pool = Pool("p", 0, 0)
    assert (pool.max_tokens, pool.max_entries) == (0, 0)


def test_pool_is_frozen():
    """Fields cannot be reassigned."""
    pool = Pool("p", 1, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pool.name = "q"


def test_pool_is_hashable_and_equal_by_value():
    """A pool built from a list hashes like the tuple form."""
    a = Pool("p", 1, 1, types=["a"])
    b = Pool("p", 1, 1, types=("a",))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


@pytest.mark.parametrize(
    "name", ["a\n## injected", "a\r", "tab\there", "\x1b[31mred", "a\u2028b", "  "]
)
def test_a_name_is_one_line_of_printable_text(name):
    """render writes the name as a header: a newline in it wrote a header of
    its own into the prompt."""
    with pytest.raises(ValueError, match="^name must be one line of printable text"):
        Pool(name, 1, 1)


@pytest.mark.parametrize(
    "name", ["core", "Corrections (always apply)", "é 日本", " x "]
)
def test_a_printable_name_is_kept(name):
    assert Pool(name, 1, 1).name == name


@pytest.mark.parametrize(
    ("min_score", "kept"),
    [(10**300, 10**300), (float("inf"), float("inf")), (-1e308, -1e308)],
    ids=["300", "inf", "-1e308"],
)
def test_a_floor_in_the_float_range_is_kept(min_score, kept):
    assert Pool("p", 1, 1, min_score=min_score).min_score == kept


@pytest.mark.parametrize(
    "min_score", [10**400, -(10**400), 10**5000], ids=["400", "-400", "5000"]
)
def test_a_floor_past_the_float_range_is_a_clear_error(min_score):
    """10**400 raised OverflowError from math.isnan."""
    with pytest.raises(ValueError) as caught:
        Pool("p", 1, 1, min_score=min_score)
    assert str(caught.value) == (
        "min_score must be within the float range, got an int past it; "
        "use inf for a floor no score reaches"
    )


def test_a_fraction_past_the_float_range_is_named():
    from fractions import Fraction

    with pytest.raises(ValueError, match="got a Fraction past it"):
        Pool("p", 1, 1, min_score=Fraction(10**400, 3))
