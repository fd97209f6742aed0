"""Bearer tokens of the HTTP server: who may use which namespace.

A tokens file is JSON, written by ``poolsplit-mcp token add`` and read by
``poolsplit-mcp --http ... --tokens FILE`` (or given whole in the
``POOLSPLIT_MCP_TOKENS`` environment variable)::

    {"version": 1, "tokens": [
      {"name": "ada", "sha256": "<64 hex digits>",
       "namespaces": ["ada", "team"], "read_only": false,
       "pin": false, "quarantine": false}
    ]}

Decisions:

- A token is ``psm_`` and 43 characters of ``secrets.token_urlsafe(32)`` (256
  random bits), printed once by ``token add``; the file keeps only its
  SHA-256. A token that random needs no salt or slow hash: nobody can search
  2**256 values, and a fast hash keeps every request cheap.
- A presented token is hashed, and its SHA-256 looked up in a dict of the
  stored hashes (constant time in the number of tokens), the one candidate
  then compared by ``hmac.compare_digest``. The key looked up is the
  digest, never the token: what the time of a lookup could tell (how much
  of a stored digest a presented digest shares) gives no way to a token,
  which would take a SHA-256 preimage.
- A token grants its namespaces all read-write or all read-only
  (``--read-only``); the first namespace listed is the one ``/mcp`` serves
  (``/mcp/NAME`` picks another the token grants).
- Two more grants, per token (issue 51): ``pin`` (``--pin``) may write and
  change always-scope entries, which load on every recall past every cap,
  so a read-write token without it cannot steer everyone's context;
  ``quarantine`` (``--quarantine``) marks a writer nobody vouches for,
  whose entries load only in the quarantine pool. A token holds at most
  one of them, and neither when read-only. A file without these keys (one
  written by 0.2 or earlier) grants neither: its read-write tokens keep
  every write but always-scope ones.
- Grants travel as OAuth scopes, ``poolsplit-write:NS``,
  ``poolsplit-read:NS``, ``poolsplit-pin:NS`` and
  ``poolsplit-quarantine:NS``, so that a token from a real authorization
  server (any ``TokenVerifier``) grants namespaces by the same rule
  (:func:`grants_from_scopes`, the one reading of a grant).
- A running server reads the file again when its content changes
  (:class:`WatchedTokens`: the SHA-256 of its bytes, read no more than once
  a second), so ``token add`` and ``token remove`` take effect within
  seconds without a restart, and so does a hand edit that keeps the file's
  size and modification time: metadata would miss it. An empty file (no
  bytes, or only whitespace) holds no token: emptying the file revokes
  every token. A file that became unreadable or invalid keeps the last
  good tokens in force and says why on stderr once per change: a
  half-edited file must not lock every tenant out, nor let anyone in.

This module is the standard library only, so ``token add`` works without the
MCP SDK.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

__all__ = [
    "ENV_TOKENS",
    "Grant",
    "TokenRecord",
    "TokensError",
    "WatchedTokens",
    "add_token",
    "default_tokens_path",
    "grants_from_scopes",
    "hash_token",
    "load_tokens",
    "match_token",
    "read_tokens",
    "scopes_of",
    "token_argv",
]

ENV_TOKENS: Final = "POOLSPLIT_MCP_TOKENS"
READ_SCOPE: Final = "poolsplit-read:"
WRITE_SCOPE: Final = "poolsplit-write:"
PIN_SCOPE: Final = "poolsplit-pin:"
QUARANTINE_SCOPE: Final = "poolsplit-quarantine:"
_PREFIX: Final = "psm_"
_HEX: Final = frozenset("0123456789abcdef")
_MAX_NAME: Final = 200
# How often a server looks at its tokens file for a change (seconds): a
# removed token stops working within this, and a request costs one stat()
# at most this often.
RELOAD_INTERVAL: Final = 1.0


class TokensError(ValueError):
    """A tokens file or token command that cannot be used; one line."""


@dataclass(frozen=True)
class TokenRecord:
    """One tenant's token: its name, the token's SHA-256 (hex), the
    namespaces it grants (the first is the default), whether they are
    read-only, and its two other grants (see the module docstring)."""

    name: str
    sha256: str
    namespaces: tuple[str, ...]
    read_only: bool = False
    pin: bool = False
    quarantine: bool = False


class Grant(NamedTuple):
    """What a token may do in one namespace: write (else only read), write
    always-scope entries (``pin``), and whether its writer is quarantined."""

    writable: bool
    pin: bool = False
    quarantine: bool = False


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token's UTF-8 bytes (what the file keeps)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _by_hash(records: Iterable[TokenRecord]) -> dict[str, TokenRecord]:
    """Each stored hash's record: the first one listing it (a hand-edited
    file may list a hash twice; the file is read top down)."""
    index: dict[str, TokenRecord] = {}
    for record in records:
        index.setdefault(record.sha256, record)
    return index


def _find(index: Mapping[str, TokenRecord], token: str) -> TokenRecord | None:
    """The record of ``token`` in an index by hash, or None.

    The lookup key is the token's digest, so a lookup's time depends on the
    digest only; the one candidate is confirmed by ``hmac.compare_digest``.
    """
    digest = hash_token(token)
    candidate = index.get(digest)
    if candidate is None:
        return None
    same = hmac.compare_digest(digest.encode("ascii"), candidate.sha256.encode("ascii"))
    return candidate if same else None


def match_token(records: Iterable[TokenRecord], token: str) -> TokenRecord | None:
    """The first record whose hash is the token's, or None (O(n) to index
    ``records``; :meth:`WatchedTokens.match` keeps the index)."""
    return _find(_by_hash(records), token)


def scopes_of(record: TokenRecord) -> list[str]:
    """The record's grants as scopes, in its namespaces' order."""
    prefix = READ_SCOPE if record.read_only else WRITE_SCOPE
    scopes = [prefix + namespace for namespace in record.namespaces]
    for granted, extra in (
        (record.pin, PIN_SCOPE),
        (record.quarantine, QUARANTINE_SCOPE),
    ):
        if granted:
            scopes += [extra + namespace for namespace in record.namespaces]
    return scopes


def _scoped(scope: str, prefix: str) -> str | None:
    """The namespace ``scope`` names after ``prefix``, or None."""
    if scope.startswith(prefix) and len(scope) > len(prefix):
        return scope[len(prefix) :]
    return None


def grants_from_scopes(scopes: Iterable[str]) -> dict[str, Grant]:
    """Namespace -> :class:`Grant`, from a token's scopes (first grant first).

    ``poolsplit-write:NS`` grants NS read-write, ``poolsplit-read:NS``
    read-only (unless a write grant names it too); ``poolsplit-pin:NS``
    adds pin to a write grant of NS, and ``poolsplit-quarantine:NS``
    quarantines the writer in NS, which takes pin away (the safe reading
    of a token that asks for both); other scopes grant nothing, and pin or
    quarantine alone grants no namespace. The one rule for a token file's
    tokens and a real authorization server's.
    """
    listed = list(scopes)
    writable: dict[str, bool] = {}
    for scope in listed:
        for prefix, writes in ((WRITE_SCOPE, True), (READ_SCOPE, False)):
            namespace = _scoped(scope, prefix)
            if namespace is not None:
                writable[namespace] = writable.get(namespace, False) or writes
    pins = {_scoped(scope, PIN_SCOPE) for scope in listed}
    quarantined = {_scoped(scope, QUARANTINE_SCOPE) for scope in listed}
    return {
        namespace: Grant(
            writes,
            pin=writes and namespace in pins and namespace not in quarantined,
            quarantine=writes and namespace in quarantined,
        )
        for namespace, writes in writable.items()
    }


# ---------------------------------------------------------------------------
# The file


def default_tokens_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/poolsplit/tokens.json``, else under ``~/.config``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "poolsplit" / "tokens.json"


def _check_name(where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_NAME:
        raise TokensError(
            f"{where}: must be a non-blank str of at most {_MAX_NAME} "
            f"characters, got {value!r}"
        )
    return value


def _record(index: int, item: object) -> TokenRecord:
    where = f"tokens[{index}]"
    if not isinstance(item, dict):
        raise TokensError(f"{where}: must be an object, got {type(item).__name__}")
    unknown = sorted(set(item) - set(_KEYS))
    if unknown:
        raise TokensError(f"{where}.{unknown[0]}: unknown key")
    name = _check_name(f"{where}.name", item.get("name"))
    digest = item.get("sha256")
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX:
        raise TokensError(
            f"{where}.sha256: must be 64 lowercase hex digits (the token's "
            f"SHA-256), got {digest!r}"
        )
    namespaces = item.get("namespaces")
    if not isinstance(namespaces, list) or not namespaces:
        raise TokensError(
            f"{where}.namespaces: must be a non-empty list of namespaces, "
            f"got {namespaces!r}"
        )
    for position, namespace in enumerate(namespaces):
        _check_name(f"{where}.namespaces[{position}]", namespace)
    flags = {}
    for key in ("read_only", "pin", "quarantine"):
        flags[key] = item.get(key, False)
        if not isinstance(flags[key], bool):
            raise TokensError(
                f"{where}.{key}: must be true or false, got {flags[key]!r}"
            )
    _check_grants(where, **flags)
    return TokenRecord(name, digest, tuple(dict.fromkeys(namespaces)), **flags)


_KEYS: Final = ("name", "sha256", "namespaces", "read_only", "pin", "quarantine")


def _check_grants(where: str, *, read_only: bool, pin: bool, quarantine: bool) -> None:
    """A token is pinned or quarantined, not both, and neither when read-only."""
    if pin and quarantine:
        raise TokensError(
            f"{where}: pin and quarantine exclude each other (a writer nobody "
            "vouches for never writes always-scope entries)"
        )
    if read_only and (pin or quarantine):
        grant = "pin" if pin else "quarantine"
        raise TokensError(f"{where}: a read-only token writes nothing: drop {grant}")


def load_tokens(text: str, source: str) -> list[TokenRecord]:
    """The records of a tokens document; TokensError names ``source`` and
    the entry at fault. A blank document (no bytes, or only whitespace: an
    emptied file) holds no token."""
    if not text.strip():
        return []
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TokensError(f"{source}: not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("tokens"), list):
        raise TokensError(f'{source}: must be an object {{"tokens": [...]}}')
    if document.get("version", 1) != 1:
        raise TokensError(f"{source}: version {document['version']!r} is not 1")
    records: list[TokenRecord] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(document["tokens"]):
        try:
            record = _record(index, item)
        except TokensError as exc:
            raise TokensError(f"{source}: {exc}") from None
        if record.name in seen:
            raise TokensError(
                f"{source}: tokens[{index}].name: {record.name!r} is "
                f"tokens[{seen[record.name]}]'s too"
            )
        seen[record.name] = index
        records.append(record)
    return records


def read_tokens(
    path: str | None, environ: Mapping[str, str] | None = None
) -> list[TokenRecord] | None:
    """The tokens of ``--tokens FILE`` or of ``$POOLSPLIT_MCP_TOKENS``;
    None when neither is given. Both at once is a TokensError."""
    env = os.environ if environ is None else environ
    inline = env.get(ENV_TOKENS)
    if path is not None and inline:
        raise TokensError(f"give --tokens or {ENV_TOKENS}, not both")
    if inline:
        return load_tokens(inline, ENV_TOKENS)
    if path is None:
        return None
    return _parse_file(path, _read_bytes(path))


def _read_bytes(path: str) -> bytes:
    """The file's bytes; TokensError saying why it cannot be read."""
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        reason = exc.strerror or exc
        raise TokensError(f"--tokens {path!r}: cannot read it: {reason}") from None


def _parse_file(path: str, data: bytes) -> list[TokenRecord]:
    """The records of a tokens file's bytes (UTF-8 JSON)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokensError(f"--tokens {path!r}: cannot read it: {exc}") from None
    return load_tokens(text, path)


_Table = tuple[tuple[TokenRecord, ...], dict[str, TokenRecord]]


class WatchedTokens:
    """The records of a tokens file, read again when its content changes.

    :meth:`records` and :meth:`match` read the file at most once per
    ``interval`` seconds (the first call reads it at once) and compare the
    SHA-256 of its bytes with the last one seen: any change of content
    takes effect, the emptied file (no token) and a replacement of the
    same size and modification time included; size, modification time and
    inode would miss the last (``os.utime`` sets a modification time, an
    in-place write keeps the inode). Reading a tokens file is cheap (2,000
    tokens are about 300 KB). A file that cannot be read or is not a valid
    tokens file keeps the last good records and writes one line to stderr,
    once per change of its content; a reload that changes the records says
    so on stderr. Without a path (tokens from ``$POOLSPLIT_MCP_TOKENS``) the
    records never change.

    ``records`` are the tokens in force until the first read: a spawned
    worker gets its supervisor's, and reads the file itself on its first
    request, so a token removed while it started is refused all the same.
    """

    def __init__(
        self,
        records: Sequence[TokenRecord],
        path: str | None = None,
        *,
        interval: float = RELOAD_INTERVAL,
    ) -> None:
        self._table = _table(records)
        self._path = path
        self._interval = interval
        self._lock = threading.Lock()
        self._seen: str | None = None  # the digest of the content last read
        self._next = 0.0  # the first call reads the file

    def records(self) -> tuple[TokenRecord, ...]:
        """The tokens in force now."""
        return self._current()[0]

    def match(self, token: str) -> TokenRecord | None:
        """The record of ``token`` among the tokens in force now, or None:
        one dict lookup by its digest (see :func:`_find`)."""
        return _find(self._current()[1], token)

    def _current(self) -> _Table:
        if self._path is None or time.monotonic() < self._next:
            return self._table
        with self._lock:
            if time.monotonic() >= self._next:
                self._next = time.monotonic() + self._interval
                self._look(self._path)
        return self._table

    def _look(self, path: str) -> None:
        """Reload ``path`` if its content is not the content last seen."""
        seen, data = _content(path)
        if seen == self._seen:
            return
        self._seen = seen
        try:
            if isinstance(data, TokensError):
                raise data
            found = _parse_file(path, data)
        except TokensError as exc:
            _say(
                f"tokens not reloaded, the last good ones stay in force: "
                f"{' '.join(str(exc).split())}"
            )
            return
        if tuple(found) != self._table[0]:
            self._table = _table(found)
            _say(f"tokens reloaded from {path}: {len(found)} token(s)")


def _content(path: str) -> tuple[str, bytes | TokensError]:
    """The file's state (the SHA-256 of its bytes, or why it cannot be
    read) and its bytes, or that error."""
    try:
        data = _read_bytes(path)
    except TokensError as exc:
        return f"unreadable: {exc}", exc
    return hashlib.sha256(data).hexdigest(), data


def _table(records: Iterable[TokenRecord]) -> _Table:
    """Records and their index by hash, swapped in as one value."""
    kept = tuple(records)
    return kept, _by_hash(kept)


def _say(line: str) -> None:
    print(f"poolsplit-mcp: {line}", file=sys.stderr, flush=True)


def _write(path: Path, records: Sequence[TokenRecord]) -> None:
    """Replace the file at once (a reader sees the old or the new one), 0600."""
    document: dict[str, Any] = {
        "version": 1,
        "tokens": [
            {
                "name": r.name,
                "sha256": r.sha256,
                "namespaces": list(r.namespaces),
                "read_only": r.read_only,
                "pin": r.pin,
                "quarantine": r.quarantine,
            }
            for r in records
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".tokens.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, ensure_ascii=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _existing(path: Path) -> list[TokenRecord]:
    if not path.exists():
        return []
    return load_tokens(path.read_text(encoding="utf-8"), str(path))


def add_token(
    path: Path,
    name: str,
    namespaces: Sequence[str],
    *,
    read_only: bool = False,
    pin: bool = False,
    quarantine: bool = False,
) -> str:
    """Add a token for ``name`` to the file (created if missing) and return
    the token, which is stored nowhere else; an existing name is refused,
    and so are ``pin`` with ``quarantine`` and either with ``read_only``."""
    _check_name("NAME", name)
    _check_grants("token add", read_only=read_only, pin=pin, quarantine=quarantine)
    if not namespaces:
        raise TokensError("--namespace: give at least one")
    for namespace in namespaces:
        _check_name("--namespace", namespace)
    records = _existing(path)
    if any(r.name == name for r in records):
        raise TokensError(
            f"{path}: a token named {name!r} exists; `token remove {name}` first"
        )
    token = _PREFIX + secrets.token_urlsafe(32)
    unique = tuple(dict.fromkeys(namespaces))
    records.append(
        TokenRecord(name, hash_token(token), unique, read_only, pin, quarantine)
    )
    _write(path, records)
    return token


# ---------------------------------------------------------------------------
# `poolsplit-mcp token ...`


def token_argv(argv: Sequence[str]) -> list[str] | None:
    """The arguments of ``poolsplit-mcp token ...`` for :func:`main`, or None
    when ``argv`` is not a token command.

    ``token`` may follow a ``--tokens FILE`` (or ``--tokens=FILE``): the
    file then goes after it, where :func:`main` reads it as well.
    """
    args = list(argv)
    if args[:1] == ["token"]:
        return args[1:]
    if args[:1] == ["--tokens"] and args[2:3] == ["token"]:
        return args[3:] + args[:2]
    if args[:1] and args[0].startswith("--tokens=") and args[1:2] == ["token"]:
        return args[2:] + args[:1]
    return None


def _parser() -> argparse.ArgumentParser:
    # --tokens on the command and on each subcommand, so that it may come
    # before or after `add NAME ...`; a subcommand's default is SUPPRESS so
    # that it never overwrites a --tokens given before the subcommand.
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--tokens",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help=f"the tokens file (default: {default_tokens_path()})",
    )
    parser = argparse.ArgumentParser(
        prog="poolsplit-mcp token",
        description="manage the bearer tokens of poolsplit-mcp --http",
    )
    parser.add_argument(
        "--tokens",
        metavar="FILE",
        help=f"the tokens file (default: {default_tokens_path()})",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser(
        "add", help="add a token and print it once", parents=[where]
    )
    add.add_argument("name", metavar="NAME", help="who holds it (unique)")
    add.add_argument(
        "--namespace",
        metavar="NS",
        action="append",
        required=True,
        help="a namespace it may use; repeat for several (the first is /mcp's)",
    )
    add.add_argument(
        "--read-only",
        action="store_true",
        help="recall, get, list and explain only",
    )
    add.add_argument(
        "--pin",
        action="store_true",
        help="may write and change always-scope entries (loaded on every recall)",
    )
    add.add_argument(
        "--quarantine",
        action="store_true",
        help="a writer nobody vouches for: its entries load only in the "
        "quarantine pool (2 entries, 200 tokens a recall unless --pools says)",
    )
    remove = commands.add_parser(
        "remove", help="delete a token by name", parents=[where]
    )
    remove.add_argument("name", metavar="NAME")
    commands.add_parser("list", help="names and grants (never tokens)", parents=[where])
    return parser


def main(argv: Sequence[str]) -> int:
    """``poolsplit-mcp token add|remove|list``; 2 with one line on error."""
    args = _parser().parse_args(list(argv))
    path = Path(args.tokens) if args.tokens else default_tokens_path()
    try:
        if args.command == "add":
            token = add_token(
                path,
                args.name,
                args.namespace,
                read_only=args.read_only,
                pin=args.pin,
                quarantine=args.quarantine,
            )
            print(token)
            print(
                f"poolsplit-mcp: token for {args.name!r} added to {path} (shown "
                f"once, keep it secret); serve with --tokens {path}",
                file=sys.stderr,
            )
        elif args.command == "remove":
            records = _existing(path)
            kept = [r for r in records if r.name != args.name]
            if len(kept) == len(records):
                raise TokensError(f"{path}: no token named {args.name!r}")
            _write(path, kept)
        else:
            for record in _existing(path):
                mode = "read-only" if record.read_only else "read-write"
                mode += ",pin" if record.pin else ""
                mode += ",quarantine" if record.quarantine else ""
                print(f"{record.name}\t{mode}\t{','.join(record.namespaces)}")
    except (TokensError, OSError, UnicodeDecodeError) as exc:
        print(
            f"poolsplit-mcp token: error: {' '.join(str(exc).split())}", file=sys.stderr
        )
        return 2
    return 0
