"""Stateful test: a store that grows and changes over turns, checked every step.

The machine adds entries, supersedes and archives them, adds corrections in
the middle of floods of fresh top-priority tasks, and changes the query; after
every step retrieval must satisfy the invariants and equal the naive oracle.
The example count comes from the hypothesis profile (HYPOTHESIS_PROFILE=long).
"""

from datetime import timedelta

import pytest
from conftest import NOW
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from oracle import (
    check_invariants,
    ids,
    oracle_is_active,
    oracle_retrieve_pools,
    snapshot,
)

from poolsplit import Pool, clear_caches, explain, retrieve_pools

# Always-scope entries of a type no pool admits are generated on purpose; a
# library that warns about them (PoolsplitWarning) is not what this checks.
pytestmark = pytest.mark.filterwarnings("ignore::poolsplit.PoolsplitWarning")

TYPES = ["task", "fact", "skill", "growth", "correction"]
WORDS = ["deploy", "cluster", "billing", "alpha", "the", "release"]
CONTEXTS = [
    None,
    {"message": "deploy the cluster"},
    {"message": "billing release", "tags": ["b"], "project": "p"},
]

pool_specs = st.lists(
    st.tuples(
        st.integers(0, 80),
        st.integers(0, 6),
        st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)),
    ),
    min_size=1,
    max_size=4,
)


class StoreOverTurns(RuleBasedStateMachine):
    """The host's view: it owns and edits the store; poolsplit only reads it."""

    @initialize(specs=pool_specs, corrections_first=st.booleans())
    def setup(self, specs, corrections_first):
        core = Pool("core", 0, 0, ("correction",))
        rest = [Pool(f"p{i}", t, n, ty) for i, (t, n, ty) in enumerate(specs)]
        self.pools = [core, *rest] if corrections_first else [*rest, core]
        self.store = []
        self.serial = 0
        self.context = None

    def new_id(self):
        self.serial += 1
        return f"e{self.serial}"

    @rule(
        kind=st.sampled_from(TYPES),
        priority=st.one_of(st.integers(-5, 10), st.floats(-1e3, 1e3)),
        tokens=st.one_of(st.none(), st.integers(-2, 30)),
        age=st.integers(-5, 400),
        words=st.lists(st.sampled_from(WORDS), max_size=5),
        tags=st.lists(st.sampled_from("abc"), max_size=2),
        always=st.booleans(),
    )
    def add_entry(self, kind, priority, tokens, age, words, tags, always):
        entry = {
            "id": self.new_id(),
            "type": kind,
            "base_priority": priority,
            "created": (NOW - timedelta(days=age)).isoformat(),
            "content": " ".join(words),
            "tags": tags,
        }
        if tokens is not None:
            entry["token_count"] = tokens
        if always:
            entry["scope"] = "always"
        self.store.append(entry)

    @rule(size=st.integers(1, 25), text=st.sampled_from(WORDS))
    def correction_during_flood(self, size, text):
        """Fresh urgent tasks arrive; a correction is added in the middle."""
        half = size // 2
        for number in range(size):
            if number == half:
                self.store.append(
                    {
                        "id": self.new_id(),
                        "type": "correction",
                        "scope": "always",
                        "content": f"do not {text} on Fridays",
                    }
                )
            self.store.append(
                {
                    "id": self.new_id(),
                    "type": "task",
                    "base_priority": 1e6,
                    "created": NOW.isoformat(),
                    "content": f"URGENT {text} alert {number}",
                    "token_count": 3,
                }
            )

    @precondition(lambda self: self.store)
    @rule(data=st.data())
    def supersede(self, data):
        """Replace an entry: the old one points at its successor."""
        index = data.draw(st.integers(0, len(self.store) - 1))
        old = self.store[index]
        new = dict(old, id=self.new_id(), content=f"{old.get('content')} (v2)")
        new.pop("superseded_by", None)
        self.store[index] = dict(old, superseded_by=new["id"])
        self.store.append(new)

    @precondition(lambda self: self.store)
    @rule(data=st.data(), status=st.sampled_from(["archived", "deleted", "active"]))
    def set_status(self, data, status):
        index = data.draw(st.integers(0, len(self.store) - 1))
        self.store[index] = dict(self.store[index], status=status)

    @rule(number=st.integers(0, len(CONTEXTS) - 1))
    def change_query(self, number):
        self.context = CONTEXTS[number]

    @rule()
    def clear(self):
        clear_caches()

    @invariant()
    def retrieval_holds(self):
        before = snapshot(self.store)
        result = retrieve_pools(self.store, self.pools, self.context, now=NOW)
        check_invariants(
            self.store, self.pools, self.context, result, before=before, now=NOW
        )
        expected = oracle_retrieve_pools(self.store, self.pools, self.context, now=NOW)
        assert ids(result) == ids(expected)
        report = explain(self.store, self.pools, self.context, now=NOW)
        assert ids(report.selected()) == ids(result)
        # The core pool (0 tokens, 0 entries) admits every live correction.
        loaded = {id(e) for chosen in result.values() for e in chosen}
        for entry in self.store:
            if entry["type"] == "correction" and entry.get("scope") == "always":
                assert (id(entry) in loaded) == oracle_is_active(entry)


TestStoreOverTurns = StoreOverTurns.TestCase
# Examples come from the profile; 25 steps reach stores of a few hundred entries.
TestStoreOverTurns.settings = settings(stateful_step_count=25)
