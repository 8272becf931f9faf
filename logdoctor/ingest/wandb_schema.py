"""The part of W&B's record schema that logdoctor reads, described without the wandb package.

A `.wandb` file's records are `wandb_internal.Record` protobuf messages. The
wandb package (hundreds of MB with its Go core) ships their generated classes,
but reading a run needs only a handful of fields: history rows, config,
summary, the run's name and id, and the exit code. Protobuf decodes by field
number and skips fields it was not told about, so a schema holding just these
fields, with wandb's own numbers, reads every record wandb writes; the rest of
each record is ignored at parse time. The numbers are those of
`wandb/proto/wandb_internal.proto` (stable since wandb 0.12); a test decodes
the bundled runs with both this schema and wandb's classes and compares them
value by value.

wandb's `HistoryItem` can also hold a value in its typed oneof `value`
(`number`, `integer`, `text`...) instead of `value_json`; the schema carries
that oneof too, and `item_value_json` turns either form into JSON text.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "logdoctor_wandb"
_F = descriptor_pb2.FieldDescriptorProto

#: message name -> [(field name, number, type, repeated, message type or None[, oneof index])]
_MESSAGES: dict[str, list[tuple]] = {
    "HistoryStep": [("num", 1, _F.TYPE_INT64, False, None)],
    "HistoryItem": [
        ("key", 1, _F.TYPE_STRING, False, None),
        ("nested_key", 2, _F.TYPE_STRING, True, None),
        ("none", 3, _F.TYPE_INT32, False, None, 0),  # an enum on the wire: a varint
        ("boolean", 4, _F.TYPE_BOOL, False, None, 0),
        ("integer", 5, _F.TYPE_SINT64, False, None, 0),
        ("number", 6, _F.TYPE_DOUBLE, False, None, 0),
        ("text", 7, _F.TYPE_STRING, False, None, 0),
        ("json", 8, _F.TYPE_STRING, False, None, 0),
        ("value_json", 16, _F.TYPE_STRING, False, None),
    ],
    "HistoryRecord": [
        ("item", 1, _F.TYPE_MESSAGE, True, "HistoryItem"),
        ("step", 2, _F.TYPE_MESSAGE, False, "HistoryStep"),
    ],
    "KeyedItem": [  # ConfigItem and SummaryItem share this layout
        ("key", 1, _F.TYPE_STRING, False, None),
        ("nested_key", 2, _F.TYPE_STRING, True, None),
        ("value_json", 16, _F.TYPE_STRING, False, None),
    ],
    "KeyedRecord": [  # ConfigRecord and SummaryRecord
        ("update", 1, _F.TYPE_MESSAGE, True, "KeyedItem"),
        ("remove", 2, _F.TYPE_MESSAGE, True, "KeyedItem"),
    ],
    "RunRecord": [
        ("run_id", 1, _F.TYPE_STRING, False, None),
        ("config", 4, _F.TYPE_MESSAGE, False, "KeyedRecord"),
        ("display_name", 8, _F.TYPE_STRING, False, None),
    ],
    "RunExitRecord": [("exit_code", 1, _F.TYPE_INT32, False, None)],
}

#: Record's oneof `record_type`: the members logdoctor reads.
_RECORD_TYPES = [
    ("history", 2, "HistoryRecord"),
    ("summary", 3, "KeyedRecord"),
    ("config", 5, "KeyedRecord"),
    ("run", 17, "RunRecord"),
    ("exit", 18, "RunExitRecord"),
]


def _add_field(message, name, number, kind, repeated, type_name, oneof=None):
    field = message.field.add(name=name, number=number, type=kind)
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name:
        field.type_name = f".{_PACKAGE}.{type_name}"
    if oneof is not None:
        field.oneof_index = oneof


@lru_cache(maxsize=1)
def record_class():
    """The `Record` message class (built once, in a private descriptor pool)."""
    file = descriptor_pb2.FileDescriptorProto(name="logdoctor_wandb.proto", package=_PACKAGE, syntax="proto3")
    for name, fields in _MESSAGES.items():
        message = file.message_type.add(name=name)
        if any(len(spec) > 5 for spec in fields):
            message.oneof_decl.add(name="value")
        for spec in fields:
            _add_field(message, *spec)
    record = file.message_type.add(name="Record")
    record.oneof_decl.add(name="record_type")
    for name, number, type_name in _RECORD_TYPES:
        _add_field(record, name, number, _F.TYPE_MESSAGE, False, type_name, oneof=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.Record"))


def item_value_json(item) -> str:
    """A history item's value as JSON text, whichever field wandb stored it in."""
    if item.value_json:
        return item.value_json
    kind = item.WhichOneof("value")
    if kind == "number":
        value = item.number
        if math.isnan(value):
            return "NaN"
        return repr(value) if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if kind == "integer":
        return str(item.integer)
    if kind == "boolean":
        return "true" if item.boolean else "false"
    if kind == "text":
        return json.dumps(item.text)
    if kind == "json":
        return item.json
    return "null"
