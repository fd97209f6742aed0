"""A deliberately naive model of retrieve/retrieve_pools, written from the spec.

It shares only the tie keys (``_created_key``/``_id_key``) and the public
``default_scorer`` with the library; it never calls ``_select``.
"""

from poolsplit import (
    _created_key,
    _id_key,
    default_is_active,
    default_scorer,
    default_token_counter,
)


def oracle_cost(entry, token_counter=default_token_counter):
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    content = entry.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = str(content)
    counted = token_counter(content)
    return max(1, counted)


def oracle_retrieve_pools(
    entries,
    pools,
    context=None,
    *,
    scorer=default_scorer,
    token_counter=default_token_counter,
    is_active=default_is_active,
    now=None,
):
    entries = list(entries)
    # One object listed twice is one entry, at its first position.
    firsts = {}
    for index, entry in enumerate(entries):
        firsts.setdefault(id(entry), index)
    taken = set()
    scores = {}
    results = {}
    for pool in pools:
        always = []
        context_entries = []
        for index, entry in enumerate(entries):
            if id(entry) in taken or firsts[id(entry)] != index:
                continue
            if not is_active(entry):
                continue
            kind = entry.get("type")
            if kind is None:
                kind = "note"
            if pool.types is not None and kind not in pool.types:
                continue
            if entry.get("scope") == "always":
                always.append(entry)
            else:
                context_entries.append((index, entry))
        for index, entry in context_entries:
            if index not in scores:
                scores[index] = float(scorer(entry, context, now=now))
        context_entries.sort(
            key=lambda pair: (
                -scores[pair[0]],
                _created_key(pair[1].get("created")),
                _id_key(pair[1].get("id")),
                pair[0],
            )
        )
        chosen = list(always)
        used = 0
        count = 0
        for _, entry in context_entries:
            cost = oracle_cost(entry, token_counter)
            if count < pool.max_entries and used + cost <= pool.max_tokens:
                chosen.append(entry)
                used += cost
                count += 1
        for entry in chosen:
            taken.add(id(entry))
        results[pool.name] = chosen
    return results


def oracle_retrieve(entries, pool, context=None, **kwargs):
    return oracle_retrieve_pools(entries, [pool], context, **kwargs)[pool.name]
