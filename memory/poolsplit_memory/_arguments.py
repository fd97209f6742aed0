"""The arguments of a tool call, checked before the tool runs (the checks
the MCP SDK does not make), and the one-line tool error every refusal and
failure of a tool is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

from poolsplit_memory import InvalidInput

__all__ = ["_CheckArguments", "_tool_error"]


def _tool_error(text: str) -> CallToolResult:
    """An ``is_error`` result with one line of text (no SDK prefix)."""
    line = " ".join(text.split()) or "error"
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


class _CheckArguments:
    """Server middleware: the checks the SDK does not make, before a tool runs.

    The SDK ignores an argument the tool lacks, so a misspelt ``supercedes``
    would store a second entry that retires nothing; it reads a string sent
    for a number or a list as JSON, so ``"null"`` became null; and it reports
    a wrong type as a multi-line dump. Here an unknown argument is refused; a
    string sent for a number or list parameter is read as the JSON it spells
    only when that is a number or list the parameter takes (else refused);
    then the SDK's own argument model of the tool validates the call, and a
    failure is a one-line tool error naming the field. The tool never runs
    on a refused call, so nothing is written.
    """

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.name: tool for tool in tools}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        name = params.get("name") if isinstance(params, Mapping) else None
        arguments = params.get("arguments") if isinstance(params, Mapping) else None
        tool = self.tools.get(name) if isinstance(name, str) else None
        if ctx.method != "tools/call" or tool is None:
            return await call_next(ctx)
        if not isinstance(arguments, Mapping):  # absent or not an object
            return await call_next(ctx)  # the SDK's own answer
        try:
            read = _read_arguments(tool, arguments)
            tool.fn_metadata.arg_model.model_validate(read)
        except InvalidInput as exc:
            return _tool_error(str(exc))
        except ValidationError as exc:
            return _tool_error(_validation_line(exc))
        assert isinstance(params, Mapping)
        return await call_next(replace(ctx, params={**params, "arguments": read}))


def _read_arguments(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with a number or list sent as a string read as its JSON.

    Raises:
        InvalidInput: an argument the tool lacks, or a string sent for a
            number or list parameter that does not spell one.
    """
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    read = dict(arguments)
    for field, value in arguments.items():
        schema = properties.get(field)
        if schema is None:
            raise InvalidInput(
                field,
                f"unknown argument of {tool.name}; expected "
                f"{', '.join(sorted(properties))}",
            )
        kinds = _kinds(schema)
        if not isinstance(value, str) or "string" in kinds:
            continue
        try:
            spelt = json.loads(value)
        except (ValueError, RecursionError):
            spelt = None
        if _kind_of(spelt) not in kinds - {"null"}:
            taken = " or ".join(sorted(kinds - {"null"}))
            raise InvalidInput(
                field,
                f"must be {taken} (or a string spelling one), got {_quoted(value)}",
            )
        read[field] = spelt
    return read


def _kinds(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a property's schema takes (``integer`` counts as
    ``number``; an ``enum`` of strings as ``string``)."""
    found: set[str] = set()
    for option in schema.get("anyOf", [schema]):
        kind = option.get("type")
        if kind is None and "enum" in option:
            kind = "string"
        if kind is not None:
            found.add("number" if kind == "integer" else kind)
    return found


def _kind_of(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return "boolean" if value is not None else "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _quoted(value: str) -> str:
    return (
        repr(value)
        if len(value) <= 40
        else f"{value[:20]!r}...({len(value)} characters)"
    )


def _validation_line(exc: ValidationError) -> str:
    """Pydantic's errors as ``field: message; field: message``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    )
