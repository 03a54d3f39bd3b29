"""What crosses the process boundary has one definition: the browser's TypeScript shapes
(frontend/src/types.ts) carry the same fields as the pydantic models the platform pushes
(umbra.telemetry.messages, .wire) and the catalogue it embeds (.catalog, .summary_columns),
and a pushed message is the JSON the dashboard reads."""
from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path

import pytest

from umbra.telemetry import catalog, messages, wire
from umbra.telemetry.summary_columns import SummaryColumn

TYPES_TS = Path(__file__).resolve().parents[2] / "frontend" / "src" / "types.ts"

# pydantic model -> the TypeScript interface that declares it for the browser
MODEL_INTERFACES = {
    messages.MetricsMessage: "MetricsMessage",
    messages.TraceMessage: "TraceMessage",
    messages.StateMessage: "StateMessage",
    messages.EventsMessage: "EventsMessage",
    messages.EventNote: "EventNote",
    messages.LogMessage: "LogMessage",
    messages.RunRowMessage: "RunRowMessage",
    wire.PointIn: "MetricPoint",
    wire.RequestRow: "TraceRequest",
    wire.TraceMeta: "TraceMeta",
}


def ts_interfaces(source: str) -> dict[str, dict[str, str]]:
    """``{interface: {field: type text}}`` of every ``export interface`` in ``source``
    (top-level fields only; comments dropped)."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    source = re.sub(r"//[^\n]*", "", source)
    out = {}
    for m in re.finditer(r"export interface (\w+)(?:\s+extends\s+[\w, ]+)?\s*\{", source):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        fields = {}
        for stmt in _top_level_statements(source[m.end():i - 1]):
            if f := re.match(r"\s*(\w+)\??\s*:\s*(.+)", stmt, re.S):
                fields[f.group(1)] = " ".join(f.group(2).split())
        out[m.group(1)] = fields
    return out


def _top_level_statements(body: str) -> list[str]:
    """``body`` split at the ``;`` that are not inside a nested ``{ ... }`` type."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    return parts + [body[start:]]


@pytest.fixture(scope="module")
def interfaces() -> dict[str, dict[str, str]]:
    return ts_interfaces(TYPES_TS.read_text())


def test_the_parser_reads_interfaces():
    parsed = ts_interfaces("export interface A {\n  /** doc; with: colon */\n  a: number;\n  b?: { c: string; d: number }[];\n"
                           "  // e: gone\n  f: \"x\" | \"y\";\n}\n")
    assert parsed == {"A": {"a": "number", "b": "{ c: string; d: number }[]", "f": '"x" | "y"'}}


@pytest.mark.parametrize("model", list(MODEL_INTERFACES), ids=lambda m: m.__name__)
def test_socket_message_interfaces_have_the_models_fields(model, interfaces):
    name = MODEL_INTERFACES[model]
    assert name in interfaces, f"frontend/src/types.ts declares no interface {name} (for {model.__name__})"
    ts, py = set(interfaces[name]), set(model.model_fields)
    assert ts == py, (f"types.ts {name} vs {model.__module__}.{model.__name__}: "
                      f"only in TypeScript {sorted(ts - py)}, only in Python {sorted(py - ts)}")


@pytest.mark.parametrize("model", messages.MESSAGE_TYPES, ids=lambda m: m.__name__)
def test_message_type_literals_match(model, interfaces):
    literal = typing.get_args(model.model_fields["type"].annotation)[0]
    assert interfaces[MODEL_INTERFACES[model]]["type"] == f'"{literal}"'


def test_socket_message_union_lists_every_message_model():
    union = re.search(r"export type SocketMessage\s*=\s*([^;]+);", TYPES_TS.read_text()).group(1)
    assert {s.strip() for s in union.split("|")} == {MODEL_INTERFACES[m] for m in messages.MESSAGE_TYPES}


def test_catalogue_interfaces_have_the_dataclass_fields(interfaces):
    assert set(interfaces["MetricInfo"]) == {f.name for f in dataclasses.fields(catalog.Metric)}
    column = SummaryColumn("k", "reward/mean", "last").as_dict()
    assert set(interfaces["SummaryColumnInfo"]) == set(column)
    assert set(interfaces["CatalogDocument"]) == set(catalog.document()) | {"summary"}


def test_pushed_messages_are_the_json_the_dashboard_reads():
    point = wire.PointIn(name="rollout/time_s", step=3, value=1.5)
    assert json.loads(messages.MetricsMessage(points=[point]).model_dump_json()) == {
        "type": "metrics", "points": [{"name": "rollout/time_s", "step": 3, "value": 1.5}]}
    row = {"group": 0, "index": 1, "instance": 0, "start_s": 0.0, "finish_s": 1.0, "prompt_tokens": 3,
           "output_tokens": 4, "finish_reason": "stop", "policy_version": 0, "chunks": [(0, 0.0, 1.0, 4)]}
    trace = messages.TraceMessage.model_validate({"iteration": 2, "requests": [row], "meta": None})
    assert json.loads(trace.model_dump_json()) == {
        "type": "trace", "iteration": 2, "meta": None, "requests": [{**row, "chunks": [[0, 0.0, 1.0, 4]]}]}
    assert json.loads(messages.StateMessage(state="running").model_dump_json()) == {
        "type": "state", "state": "running", "reason": ""}


def test_dicts_are_checked_against_the_message_models():
    assert isinstance(messages.parse_message({"type": "state", "state": "failed", "reason": "x"}),
                      messages.StateMessage)
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        messages.parse_message({"type": "state", "state": "failed", "why": "x"})  # a stray key
    with pytest.raises(ValidationError):
        messages.parse_message({"type": "nope"})
