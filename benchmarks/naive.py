"""The straightforward implementation of poolsplit's rules: the baseline row.

Re-tokenizes the message for every entry, re-parses every timestamp and
re-scores every entry in every pool that sees it. Default scorer, counter and
activity predicate only; well-formed stores only.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime, timezone
from typing import Any

import poolsplit as ps

# The README's timestamp grammar ("Timestamps"), written here from the README
# rather than imported, so that verify.py compares two readings of it.
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"[ \t\n\r\f\v]*([Zz]|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def words(text: str) -> set[str]:
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return {
        w
        for w in re.findall(r"[^\W_]+", text.lower())
        if len(w) >= ps.MIN_WORD_LENGTH and w not in ps.STOPWORDS
    }


def parse(value: Any) -> float | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        seconds: float = (value - _EPOCH).total_seconds()
        return seconds
    if not isinstance(value, str):
        return None
    m = _ISO.fullmatch(value.strip())
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, off = m.groups()
    try:
        t = datetime(
            int(y),
            int(mo),
            int(d),
            int(h or 0),
            int(mi or 0),
            int(s or 0),
            int((frac or "0")[:6].ljust(6, "0")),
            tzinfo=timezone.utc,
        )
    except ValueError:
        return None
    sec = (t - _EPOCH).total_seconds()
    if off and off.upper() != "Z":
        sign = -1 if off[0] == "-" else 1
        dg = off[1:].replace(":", "")
        sec -= sign * (int(dg[:2]) * 3600 + int(dg[2:4] or 0) * 60)
    return sec


def score(entry: dict[str, Any], context: dict[str, Any], now: datetime) -> float:
    s = float(entry.get("base_priority", ps.DEFAULT_PRIORITY))
    created = parse(entry.get("created"))
    if created is not None:
        days = max(0.0, (parse(now) - created) / 86400.0)  # type: ignore[operator]
        s *= max(
            ps.RECENCY_FLOOR, 1.0 - ps.RECENCY_SLOPE * days / ps.RECENCY_HORIZON_DAYS
        )
    tags = entry.get("tags")
    if tags:
        tag_set = {tags} if isinstance(tags, str) else set(tags)
        ctx_tags = context.get("tags") or []
        ctx_tags = {ctx_tags} if isinstance(ctx_tags, str) else set(ctx_tags)
        s *= 1.0 + ps.TAG_BOOST * len(tag_set & ctx_tags) / len(tag_set)
    project = entry.get("project")
    if project is not None:
        s *= (
            ps.PROJECT_MATCH
            if project == context.get("project")
            else ps.PROJECT_MISMATCH
        )
    mwords = words(context.get("message") or "")  # re-tokenized per entry
    if mwords:
        share = len(mwords & words(entry.get("content") or "")) / len(mwords)
        if share > ps.MESSAGE_THRESHOLD:
            s *= 1.0 + ps.MESSAGE_BOOST * share
    return s


def active(entry: dict[str, Any]) -> bool:
    st = entry.get("status")
    return (st is None or st == "active") and not entry.get("superseded_by")


def cost(entry: dict[str, Any]) -> int:
    c = entry.get("token_count")
    if isinstance(c, int) and not isinstance(c, bool) and c > 0:
        return c
    return max(1, len(entry.get("content") or "") // 4)


def retrieve_pools(
    store: list[dict[str, Any]],
    pools: list[ps.Pool],
    context: dict[str, Any],
    now: datetime,
) -> dict[str, list[dict[str, Any]]]:
    taken: set[int] = set()
    out: dict[str, list[dict[str, Any]]] = {}
    for pool in pools:
        members = [
            i
            for i, e in enumerate(store)
            if i not in taken
            and active(e)
            and (pool.types is None or e.get("type", "note") in pool.types)
        ]
        chosen = [store[i] for i in members if store[i].get("scope") == "always"]
        taken.update(i for i in members if store[i].get("scope") == "always")
        rest = [i for i in members if store[i].get("scope") != "always"]
        keyed = sorted(
            rest,
            key=lambda i: (
                -score(store[i], context, now),
                parse(store[i].get("created"))
                if store[i].get("created") is not None
                else -math.inf,
                store[i].get("created") or "",
                store[i].get("id") or "",
                i,
            ),
        )
        used = picked = 0
        for i in keyed:
            if picked >= pool.max_entries or used >= pool.max_tokens:
                break
            c = cost(store[i])
            if used + c <= pool.max_tokens:
                used += c
                picked += 1
                taken.add(i)
                chosen.append(store[i])
        out[pool.name] = chosen
    return out
