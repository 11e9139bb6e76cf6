"""Carry out ``COPY … FORMAT AS JSON 'auto'`` as one Postgres statement, after Redshift's checks.

The files hold JSON objects separated by white space. With ``'auto'`` each object's first-level keys
load into the columns of the same name (case-sensitive; keys without a column are ignored, columns
without a key get NULL), and a SUPER column takes the key's value as it is: an object or array stays
navigable, a string stays a string (``copy_json``, "Copying data from JSON and Avro", and the JSON
format for COPY). Checked first, as Redshift would refuse them:

- an object above 4 MB ("The maximum size for a JSON object in Amazon Redshift is 4 MB, which applies
  before any shredding or parsing"; COPY's data sources: "The maximum size of a single input row from
  any source is 4 MB"; the stand-in counts 4 MiB);
- an object or array for a column that is not SUPER; a string longer than its VARCHAR (unless
  TRUNCATECOLUMNS, which cuts it to the column's bytes); a non-number for a number column;
- a string inside a SUPER value above 65,535 bytes ("a single string value loaded to SUPER is
  limited to the maximum VARCHAR length of 65535 bytes", *Limitations* of SUPER);
- a time that its format does not match: without TIMEFORMAT 'YYYY-MM-DD HH:MI:SS' (fractional
  seconds and an offset allowed); with TIMEFORMAT 'auto' also ISO 8601 (``2019-02-11T05:09:12.195Z``,
  *Using automatic recognition with DATEFORMAT and TIMEFORMAT*). Other formats 'auto' knows are not
  recognised here.

Redshift answers a refused row with "Load into table … failed. Check 'stl_load_errors' system table
for details."; the stand-in adds the file, the line, the column and the reason to that message.
A key whose value is null loads NULL into a scalar column and the SUPER null into a SUPER column (an
assumption: a SUPER value can be null, and 'auto' loads the value as it is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .redshift_commands import CommandError, CopyCommand
from .redshift_copy import FAMILIES, LoadPlan, TargetColumn, copy_targets

__all__ = ["MAX_OBJECT_BYTES", "plan_json_load"]

MAX_OBJECT_BYTES = 4 * 1024 * 1024
MAX_SUPER_STRING_BYTES = 65_535
_VARCHAR = re.compile(r"^character(?: varying)?\((\d+)\)$")
_DATE = r"\d{4}-\d{2}-\d{2}"
_OFFSET = r"[+-]\d{2}(?::?\d{2})?"
_DEFAULT_TIME = re.compile(rf"^{_DATE}( \d{{2}}:\d{{2}}:\d{{2}}(\.\d{{1,6}})?({_OFFSET})?)?$")
_AUTO_TIME = re.compile(rf"^{_DATE}([ T]\d{{2}}:\d{{2}}:\d{{2}}(\.\d{{1,6}})?(Z|{_OFFSET})?)?$")
_WHITE = re.compile(r"\s*")


class _Refused(Exception):
    """One value Redshift would not load: the column and the reason."""


def plan_json_load(
    command: CopyCommand, table: str, columns: Sequence[TargetColumn], files: Sequence[tuple[str, bytes]]
) -> LoadPlan:
    """One INSERT … SELECT from ``json_array_elements($1)`` with every checked object as $1."""
    targets = {c.name: c for c in copy_targets(command, table, columns)}
    records: list[dict[str, Any]] = []
    for url, data in files:
        for line, found in _objects(table, url, data):
            try:
                records.append(_record(command, found, targets))
            except _Refused as exc:
                raise _load_error(table, f"{url} line {line}, {exc}") from None
    names = ", ".join(t.quoted for t in targets.values())
    values = ", ".join(_value_sql(t) for t in targets.values())
    sql = f"INSERT INTO {table} ({names}) SELECT {values} FROM json_array_elements($1::json) AS r(v)"
    payload = json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode()
    return LoadPlan(sql, payload, len(records))


def _objects(table: str, url: str, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """The objects of one file with the line each starts on."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _load_error(table, f"{url}: Invalid UTF8 ({exc.reason} at byte {exc.start})") from None
    decoder = json.JSONDecoder()
    found: list[tuple[int, dict[str, Any]]] = []
    position = _WHITE.match(text, 0).end()  # type: ignore[union-attr]
    line, counted = 1, 0  # newlines are counted once each, not from the start for every object
    while position < len(text):
        line += text.count("\n", counted, position)
        counted = position
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise _load_error(table, f"{url} line {line}: Invalid JSON ({exc.msg})") from None
        size = len(text[position:end].encode())
        if size > MAX_OBJECT_BYTES:
            raise _load_error(
                table, f"{url} line {line}: JSON object of {size} bytes exceeds {MAX_OBJECT_BYTES} bytes"
            )
        if not isinstance(value, dict):
            kind = type(value).__name__
            raise _load_error(table, f"{url} line {line}: JSON 'auto' needs an object, not {kind}")
        found.append((line, value))
        position = _WHITE.match(text, end).end()  # type: ignore[union-attr]
    return found


def _record(command: CopyCommand, found: dict[str, Any], targets: dict[str, TargetColumn]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in found.items():
        target = targets.get(key)
        if target is None or (value is None and not target.is_super):
            continue
        record[key] = _super(target, value) if target.is_super else _scalar(command, target, value)
    return record


def _super(target: TargetColumn, value: Any) -> Any:
    """`value` unless a string inside it is longer than SUPER takes."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and len(item.encode()) > MAX_SUPER_STRING_BYTES:
            raise _Refused(
                f"column {target.name}: a string of {len(item.encode())} bytes exceeds SUPER's "
                f"{MAX_SUPER_STRING_BYTES} bytes per string"
            )
    return value


def _scalar(command: CopyCommand, target: TargetColumn, value: Any) -> Any:
    family = FAMILIES.get(target.type_oid)
    if isinstance(value, dict | list):
        raise _Refused(
            f"column {target.name}: an object or array loads only into SUPER, not {target.type_name}"
        )
    if family == "text":
        if not isinstance(value, str):
            raise _Refused(f"column {target.name}: {json.dumps(value)} is not a string")
        return _fitted(command, target, value)
    if family in ("int", "numeric", "float"):
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole and not (family != "int" and isinstance(value, float)):
            raise _Refused(f"column {target.name}: Invalid digit, Value '{value}', Type: {target.type_name}")
    elif family == "bool" and not isinstance(value, bool):
        raise _Refused(f"column {target.name}: Invalid boolean value '{value}'")
    elif family in ("timestamp", "date"):
        pattern = _AUTO_TIME if command.time_format else _DEFAULT_TIME
        if not isinstance(value, str) or not pattern.match(value):
            raise _Refused(
                f"column {target.name}: Invalid timestamp format or value [YYYY-MM-DD HH24:MI:SS]: {value!r}"
            )
    return value


def _fitted(command: CopyCommand, target: TargetColumn, value: str) -> str:
    """`value` within its VARCHAR(n) bytes: refused, or cut at a character boundary with TRUNCATECOLUMNS."""
    match = _VARCHAR.match(target.type_name)
    encoded = value.encode()
    if match is None or len(encoded) <= int(match.group(1)):
        return value
    limit = int(match.group(1))
    if not command.truncate_columns:
        raise _Refused(f"column {target.name}: String length exceeds DDL length ({len(encoded)} > {limit})")
    return encoded[:limit].decode("utf-8", errors="ignore")


def _value_sql(target: TargetColumn) -> str:
    key = "'" + target.name.replace("'", "''") + "'"
    if target.is_super:
        return f"(r.v -> {key})::jsonb"
    return f"(r.v ->> {key})::{target.type_name}"


def _load_error(table: str, detail: str) -> CommandError:
    name = table.rsplit(".", 1)[-1].strip('"')
    return CommandError(
        f"Load into table '{name}' failed. Check 'stl_load_errors' system table for details. "
        f"[stand-in: {detail}]"
    )
