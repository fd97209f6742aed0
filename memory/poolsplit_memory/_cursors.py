"""The list cursor: a position masked and bound to its namespace by the
database's secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Final

from ._types import InvalidInput
from ._validate import _short

# A list cursor: 8 random bytes, the row's position masked by a pad drawn
# from them, and a tag binding both to the namespace, all keyed by the
# database's secret (``poolsplit_secrets``). It reveals nothing (not the
# position, which counts every namespace's rows); another namespace's or
# database's is refused, and every process on the database accepts it.
_CURSOR_BYTES: Final = 24
_CURSOR_SECRET: Final = "list cursor"


def _keyed(key: bytes, label: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, label + b"\x00".join(parts), hashlib.sha256).digest()[:8]


def _cursor(key: bytes, namespace: str, seq: int) -> str:
    """The ``next_cursor`` standing for the position after row ``seq``."""
    nonce = os.urandom(8)
    pad = _keyed(key, b"pad", nonce, namespace.encode())
    masked = bytes(a ^ b for a, b in zip(seq.to_bytes(8, "big"), pad))
    tag = _keyed(key, b"tag", nonce, masked, namespace.encode())
    return base64.urlsafe_b64encode(nonce + masked + tag).decode("ascii")


def _cursor_position(key: bytes, namespace: str, cursor: object) -> int:
    """The position a ``next_cursor`` of this database and namespace stands for.

    Raises:
        InvalidInput: anything else (another namespace's cursor, another
            database's, an edited one).
    """
    raw = b""
    if isinstance(cursor, str) and cursor.isascii():
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        except ValueError:
            raw = b""
    if len(raw) == _CURSOR_BYTES:
        nonce, masked, tag = raw[:8], raw[8:16], raw[16:]
        if hmac.compare_digest(
            tag, _keyed(key, b"tag", nonce, masked, namespace.encode())
        ):
            pad = _keyed(key, b"pad", nonce, namespace.encode())
            return int.from_bytes(bytes(a ^ b for a, b in zip(masked, pad)), "big")
    raise InvalidInput(
        "cursor",
        f"must be a next_cursor that list gave in this namespace, got "
        f"{_short(cursor)}; list again with no cursor",
    )
