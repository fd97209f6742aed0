"""Where a store's url points (:func:`parse_url`, :class:`Target`)."""

from __future__ import annotations

from typing import Final, NamedTuple
from urllib.parse import parse_qs, urlsplit, urlunsplit

from ._types import (
    DEFAULT_BUSY_MS,
    InvalidInput,
)


class Target(NamedTuple):
    """Where a url points: ``kind`` ``"sqlite"`` or ``"postgresql"``,
    ``where`` the file path (``":memory:"``) or the connection URL without
    ``busy_timeout``, and the busy timeout in milliseconds."""

    kind: str
    where: str
    busy_ms: int


_POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
_MEMORY: Final = ":memory:"


def parse_url(url: str) -> Target:
    """The one reading of a store url (open_store and the MCP server's
    ephemeral check both call it).

    ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` (SQLAlchemy's
    rule), ``:memory:`` or a plain path as it is, ``postgresql://`` or
    ``postgres://`` URLs. ``?busy_timeout=MS`` (the only parameter of a
    ``sqlite:`` URL; taken out of a PostgreSQL URL before it is passed on)
    is how long a call waits for a lock another connection holds before it
    fails with ``database is locked``, 10,000 ms by default.

    Raises:
        InvalidInput: an unsupported scheme, a URL that cannot be read, a
            bad ``busy_timeout``.
    """
    if url.startswith(_POSTGRES_SCHEMES):
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (reading it checks it)
        except ValueError as exc:
            raise InvalidInput("url", f"cannot be read: {exc}") from None
        kept = []
        busy = DEFAULT_BUSY_MS
        for item in parts.query.split("&") if parts.query else []:
            name, _, value = item.partition("=")
            if name == "busy_timeout":
                busy = _busy_ms(value, url)
            else:
                kept.append(item)
        where = urlunsplit(parts._replace(query="&".join(kept)))
        return Target("postgresql", where, busy)
    if "://" in url and not url.startswith("sqlite:"):
        scheme = url.split("://", 1)[0]
        raise InvalidInput(
            "url",
            f"unsupported scheme {scheme!r}; expected a file path, sqlite:///path, "
            ":memory: or postgresql://...",
        )
    if not url.startswith("sqlite:"):
        return Target("sqlite", url, DEFAULT_BUSY_MS)
    if not url.startswith("sqlite:///"):
        raise InvalidInput(
            "url", f"must be sqlite:///relative or sqlite:////absolute, got {url!r}"
        )
    path, _, query = url[len("sqlite:///") :].partition("?")
    busy = DEFAULT_BUSY_MS
    for name, values in parse_qs(query, keep_blank_values=True).items():
        if name != "busy_timeout":
            raise InvalidInput(
                "url", f"the only query parameter is busy_timeout=MS, got {query!r}"
            )
        busy = _busy_ms(values[-1], url)
    if not path:
        raise InvalidInput("url", f"names no file, got {url!r}")
    return Target("sqlite", path, busy)


def _busy_ms(value: str, url: str) -> int:
    if not (value.isdigit() and value.isascii()):
        raise InvalidInput(
            "url", f"busy_timeout must be a whole number of milliseconds, got {value!r}"
        )
    return int(value)


def is_ephemeral(url: str) -> bool:
    """Whether a store at this url lives in this process only (``:memory:``
    in any spelling ``parse_url`` reads).

    Raises:
        InvalidInput: the url cannot be read (see ``parse_url``).
    """
    target = parse_url(url)
    return target.kind == "sqlite" and target.where == _MEMORY
