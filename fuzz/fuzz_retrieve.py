"""Fuzz retrieve_pools, explain and validate over entries decoded from bytes.

Run: python fuzz/fuzz_retrieve.py [corpus_dir] -atheris_runs=N (see README.md).
The only acceptable outcomes are a result that satisfies every invariant, or a
TypeError/ValueError whose message names the parameter or entry at fault.
"""

from __future__ import annotations

import copy
import os
import sys
from datetime import datetime, timezone

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "tests")]

with atheris.instrument_imports():
    import poolsplit
    from poolsplit import Pool, explain, retrieve_pools, validate

from oracle import OracleError, oracle_cost, oracle_retrieve_pools  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

# Words the library gives meaning to, so the fuzzer reaches those branches.
WORDS = [
    "always",
    "active",
    "archived",
    "note",
    "task",
    "fact",
    "skill",
    "correction",
    "",
    "2025-12-01",
    "2025-12-01T10:00:00Z",
    "2026-02-30",
    "2025-06-01T00:00:00.123456789+05:30",
    "deploy cluster alpha",
    "the and for",
]
KEYS = [
    "id",
    "type",
    "scope",
    "status",
    "superseded_by",
    "token_count",
    "created",
    "content",
    "base_priority",
    "tags",
    "project",
]
TYPES = ["note", "task", "fact", "skill", "correction"]

# Messages of the documented errors name the parameter or the entry at fault.
DOCUMENTED = (
    "entries[",
    "pools[",
    "pools must",
    "pool must",
    "max_tokens",
    "max_entries",
    "name must",
    "types must",
    "context",
    "base_priority",
    "tags",
    "min_score",
)


def value(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> object:
    """Any JSON-like value: None, bool, int (huge too), float, str, list, dict."""
    kind = fdp.ConsumeIntInRange(0, 11)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.ConsumeIntInRange(-50, 200)
    if kind == 3:
        # Up to about 10**400: beyond float range, within the int-str limit.
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 170))
    if kind == 4:
        return fdp.ConsumeFloat()
    if kind in (5, 6):
        return WORDS[fdp.ConsumeIntInRange(0, len(WORDS) - 1)]
    if kind == 7:
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 40))
    if kind == 8 and depth < 3:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    if kind == 9 and depth < 3:
        return {
            KEYS[fdp.ConsumeIntInRange(0, len(KEYS) - 1)]: value(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 3))
        }
    if kind == 10:
        return fdp.ConsumeIntInRange(1_600_000_000, 1_800_000_000)
    return TYPES[fdp.ConsumeIntInRange(0, len(TYPES) - 1)]


def entry(fdp: atheris.FuzzedDataProvider) -> object:
    if fdp.ConsumeIntInRange(0, 40) == 0:
        return value(fdp)  # sometimes not a mapping at all
    return {
        KEYS[fdp.ConsumeIntInRange(0, len(KEYS) - 1)]: value(fdp)
        for _ in range(fdp.ConsumeIntInRange(0, 8))
    }


def cap(fdp: atheris.FuzzedDataProvider) -> object:
    kind = fdp.ConsumeIntInRange(0, 9)
    if kind == 0:
        return value(fdp)
    if kind == 1:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 170))
    return fdp.ConsumeIntInRange(0, 60)


def pools_of(fdp: atheris.FuzzedDataProvider) -> list[Pool]:
    pools = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        name = "pabc"[fdp.ConsumeIntInRange(0, 3)] or "p"
        if fdp.ConsumeIntInRange(0, 30) == 0:
            name = value(fdp)  # type: ignore[assignment]
        types: object = None
        if fdp.ConsumeBool():
            types = [TYPES[fdp.ConsumeIntInRange(0, 4)] for _ in range(3)][
                : fdp.ConsumeIntInRange(0, 3)
            ]
            if fdp.ConsumeIntInRange(0, 30) == 0:
                types = value(fdp)
        pools.append(Pool(name, cap(fdp), cap(fdp), types))  # type: ignore[arg-type]
    return pools


def context_of(fdp: atheris.FuzzedDataProvider) -> object:
    if fdp.ConsumeIntInRange(0, 30) == 0:
        return value(fdp)
    return {
        "message": WORDS[fdp.ConsumeIntInRange(0, len(WORDS) - 1)]
        if fdp.ConsumeBool()
        else fdp.ConsumeUnicode(20),
        "tags": value(fdp) if fdp.ConsumeIntInRange(0, 20) == 0 else ["a", "b"],
        "project": value(fdp),
    }


def hooks_of(fdp: atheris.FuzzedDataProvider) -> dict[str, object]:
    """Sometimes a scorer or counter returning fuzzed values (huge, NaN, str...)."""
    hooks: dict[str, object] = {}
    if fdp.ConsumeIntInRange(0, 3) == 0:
        scores = [value(fdp) for _ in range(fdp.ConsumeIntInRange(1, 4))]

        def scorer(entry, context, *, now):
            return scores[len(str(entry.get("id"))) % len(scores)]

        hooks["scorer"] = scorer
    if fdp.ConsumeIntInRange(0, 3) == 0:
        counts = [value(fdp) for _ in range(fdp.ConsumeIntInRange(1, 4))]

        def counter(text):
            return counts[len(text) % len(counts)]

        hooks["token_counter"] = counter
    return hooks


def documented(exc: BaseException) -> bool:
    """A TypeError or ValueError whose message names the parameter or entry;
    one that names an entry is an EntryError whose ``index`` is that entry's
    position (the command line finds its line through it)."""
    message = str(exc)
    if isinstance(exc, poolsplit.EntryError):
        position = exc.index is not None and f"entries[{exc.index}]" in message
    else:  # a parameter's error: it names no entry (it would carry no position)
        plain = (TypeError, ValueError, poolsplit.ContextError)
        position = type(exc) in plain and "entries[" not in message
    return position and any(marker in message for marker in DOCUMENTED)


def check_result(entries, pools, result, hooks) -> None:
    counter = hooks.get("token_counter", poolsplit.default_token_counter)
    assert list(result) == [p.name for p in pools], (list(result), pools)
    seen: set[int] = set()
    for pool in pools:
        chosen = result[pool.name]
        ids = [id(e) for e in chosen]
        assert not seen.intersection(ids), "an entry is in two pools"
        assert len(set(ids)) == len(ids), "an entry is twice in one pool"
        seen.update(ids)
        context = [e for e in chosen if e.get("scope") != "always"]
        assert len(context) <= pool.max_entries, (pool, len(context))
        cost = sum(max(1, int(oracle_cost(e, counter))) for e in context)
        assert cost <= pool.max_tokens, (pool, cost)
    for e in entries:
        if e.get("scope") != "always" or not poolsplit.default_is_active(e):
            continue
        kind = "note" if e.get("type") is None else e.get("type")
        first = next((p for p in pools if p.types is None or kind in p.types), None)
        if first is not None:
            assert any(x is e for x in result[first.name]), "always entry dropped"


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    entries = [entry(fdp) for _ in range(fdp.ConsumeIntInRange(0, 12))]
    before = repr(entries)
    snapshot = copy.deepcopy(entries)

    problems = validate(entries)  # never raises: it reports
    assert all(p.severity in ("error", "warning") for p in problems)

    try:
        pools = pools_of(fdp)
    except (TypeError, ValueError) as exc:
        assert documented(exc), repr(exc)
        return
    context = context_of(fdp)
    hooks = hooks_of(fdp)
    try:
        result = retrieve_pools(entries, pools, context, now=NOW, **hooks)
    except (TypeError, ValueError) as exc:
        assert documented(exc), repr(exc)
        result = None
    if result is not None:
        check_result(entries, pools, result, hooks)
        try:
            expected = oracle_retrieve_pools(entries, pools, context, now=NOW, **hooks)
        except (TypeError, ValueError, OverflowError):
            expected = None  # the oracle is stricter about numbers (float())
        except OracleError as exc:
            # The oracle's "may fail": an entry whose content or cost cannot
            # be read fails the call only if retrieval reaches it; a call
            # that returned must return the picks made without it.
            assert exc.result is not None, f"must raise {exc}, returned"
            expected = exc.result
        if expected is not None:
            assert {k: [id(e) for e in v] for k, v in expected.items()} == {
                k: [id(e) for e in v] for k, v in result.items()
            }, "differs from the oracle"
        try:
            # explain costs every eligible entry, past where retrieval stops,
            # so a bad counter may raise here only: documented.
            report = explain(entries, pools, context, now=NOW, **hooks)
        except (TypeError, ValueError) as exc:
            assert documented(exc) and "token_counter" in hooks, repr(exc)
        else:
            assert len(report.decisions) == len(entries)
            got = report.selected()
            assert {k: [id(e) for e in v] for k, v in got.items()} == {
                k: [id(e) for e in v] for k, v in result.items()
            }, "explain differs from retrieve_pools"
            report.render()
            report.to_dict()
    assert repr(entries) == before, "entries were modified"
    assert repr(snapshot) == before


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
