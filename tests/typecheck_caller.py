"""A typed caller: mypy --strict checks that EntryDict and the hook protocols fit."""

from poolsplit import (
    ActivePredicate,
    EntryDict,
    Pool,
    Scorer,
    TokenCounter,
    default_scorer,
    retrieve_pools,
)

store: list[EntryDict] = [{"id": "a", "type": "task", "content": "x", "tags": ["t"]}]
got = retrieve_pools(store, [Pool("p", 10, 1)])
first: EntryDict = got["p"][0]
s: Scorer = default_scorer


def count(text: str) -> int:
    return len(text)


c: TokenCounter = count


def always_active(entry: object) -> bool:
    return True


a: ActivePredicate = always_active
