"""Structured output as the real APIs give it, for the loopback LLM peer (tests/fakes/llm_server.py).

OpenAI (and Gemini's OpenAI-compatible endpoint): `response_format: {"type": "json_schema",
"json_schema": {"name", "schema", "strict": true}}`. A strict schema must give every object
`additionalProperties: false` and list all of its properties in `required`, or the request is refused
with a 400 (`invalid_request_error`, param `response_format`). The answer's content is then JSON in
the schema's shape, keys in the schema's order; a model that cannot answer so sends a `refusal`
instead of content.

Anthropic: `tools: [{name, description, input_schema}]` with `tool_choice: {"type": "tool", "name"}`
forces one `tool_use` block whose `input` follows the input schema (streamed as `input_json_delta`
events, `stop_reason: "tool_use"`).

A scripted reply is what the model *means*: the JSON object in its text (fenced or bare) is poured
into the schema, as constrained decoding would: keys the schema lacks dropped, missing ones given
their type's empty value, a string where a list is wanted made a one-item list, an enum value outside
the enum replaced by the enum's first. Text with no JSON object at all is a refusal.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n?```", re.DOTALL)


class SchemaRefused(ValueError):
    """The request's schema is not valid for strict mode; str() is the API's message."""


def openai_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The strict json_schema a chat request asks for, or None; raises SchemaRefused when invalid."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema") or {}
    schema = spec.get("schema")
    if not isinstance(schema, dict) or not spec.get("name"):
        raise SchemaRefused("Missing required parameter: 'response_format.json_schema.name' or '.schema'.")
    if spec.get("strict"):
        _check_strict(schema, str(spec["name"]), ())
    return schema


def anthropic_tool(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(tool name, input schema) when `tool_choice` forces one of the request's tools, else None."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == choice.get("name"):
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise SchemaRefused("tools.0.input_schema: type must be 'object'")
            return str(tool["name"]), schema
    raise SchemaRefused(f"tool_choice names a tool that is not in tools: {choice.get('name')!r}")


def _check_strict(schema: dict[str, Any], name: str, path: tuple[str, ...]) -> None:
    where = f"context=({', '.join(repr(p) for p in path)})"
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            raise SchemaRefused(f"Invalid schema for response_format '{name}': In {where}, "
                                "'additionalProperties' is required to be supplied and to be false.")
        if sorted(schema.get("required") or []) != sorted(props):
            raise SchemaRefused(f"Invalid schema for response_format '{name}': In {where}, 'required' is required "
                                "to be supplied and to be an array including every key in properties.")
        for key, sub in props.items():
            _check_strict(sub, name, (*path, "properties", key))
    if "array" in kinds and isinstance(schema.get("items"), dict):
        _check_strict(schema["items"], name, (*path, "items"))


def meant_object(text: str) -> dict[str, Any] | None:
    """The JSON object a scripted reply carries (a fenced block first, else the outermost braces)."""
    candidates = [m.group(1) for m in _FENCED.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def conform(value: Any, schema: dict[str, Any]) -> Any:
    """`value` poured into `schema` the way constrained decoding would produce it."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "enum" in schema:
        return value if value in schema["enum"] else schema["enum"][0]
    if value is None and "null" in kinds:
        return None
    if "object" in kinds:
        given = value if isinstance(value, dict) else {}
        return {key: conform(given.get(key), sub) for key, sub in (schema.get("properties") or {}).items()}
    if "array" in kinds:
        items = value if isinstance(value, list) else ([] if value in (None, "") else [value])
        return [conform(item, schema.get("items") or {}) for item in items]
    if "boolean" in kinds:
        return value if isinstance(value, bool) else (None if "null" in kinds else False)
    if "number" in kinds or "integer" in kinds:
        return value if isinstance(value, int | float) and not isinstance(value, bool) else 0
    if isinstance(value, dict | list):
        return json.dumps(value)
    return "" if value is None else str(value)


def shaped(text: str, schema: dict[str, Any]) -> str | None:
    """The reply as the API sends it under `schema`: compact JSON in the schema's key order; None: a refusal."""
    meant = meant_object(text)
    if meant is None:
        return None
    return json.dumps(conform(meant, schema), separators=(",", ":"))
