"""The JSON compliance corpus in tests/cases/."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from poolsplit import Pool, retrieve_pools

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))
ERRORS = {"TypeError": TypeError, "ValueError": ValueError}


def run(case):
    pools = [Pool(**spec) for spec in case["pools"]]
    now = datetime.fromisoformat(case["now"])
    return retrieve_pools(case["entries"], pools, case["context"], now=now)


def test_corpus_is_not_empty():
    """The corpus has cases to run."""
    assert len(CASES) >= 10


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    """Each case gives its expected ids per pool or its expected error."""
    case = json.loads(path.read_text(encoding="utf-8"))
    assert ("expected" in case) != ("error" in case)
    if "error" in case:
        with pytest.raises(ERRORS[case["error"]["type"]], match=case["error"]["match"]):
            run(case)
    else:
        result = run(case)
        assert {k: [e.get("id") for e in v] for k, v in result.items()} == case[
            "expected"
        ]
