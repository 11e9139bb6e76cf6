"""Plan a Parquet ``COPY`` as one Postgres statement that runs on the client's own connection.

The rows travel as a single json parameter of
``INSERT INTO t (cols) SELECT cols FROM json_populate_recordset(NULL::t, $1::json)``, so the load
joins the client's transaction (a ROLLBACK undoes it) and Postgres converts each value to its target
column's type. Redshift's rules are checked first (see REDSHIFT_STAND_IN_NOTES.md for sources):

- file columns map to the target columns by position (the column list, or the table's columns minus
  IDENTITY ones unless EXPLICIT_IDS); the counts must match (FILLRECORD allows fewer file columns);
- a SUPER target needs SERIALIZETOJSON; with it any Parquet value becomes a SUPER value: a string stays
  a SUPER *string* (JSON text is not parsed), a struct/list/map becomes an object/array;
- a nested Parquet column can only go into a SUPER column; scalar types must be compatible.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from .redshift_commands import CommandError, CopyCommand

__all__ = ["COLUMNS_SQL", "FAMILIES", "LoadPlan", "TargetColumn", "copy_targets", "plan_load"]

#: Run on the client's connection with the COPY's table name: sees tables its transaction created.
COLUMNS_SQL = (
    "SELECT a.attname::text, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod), a.atttypid::int, "
    "(a.attidentity <> '')::text, a.attrelid::regclass::text FROM pg_attribute a "
    "WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)

_JSONB = 3802
FAMILIES: dict[int, str] = {
    16: "bool", 20: "int", 21: "int", 23: "int", 1700: "numeric", 700: "float", 701: "float",
    25: "text", 1043: "text", 1042: "text", 19: "text", 18: "text",
    1082: "date", 1114: "timestamp", 1184: "timestamp", 1083: "time", 1266: "time", 17: "binary",
}  # fmt: skip
_ACCEPTS: dict[str, set[str]] = {
    "int": {"int"},
    "numeric": {"int", "decimal", "float"},
    "float": {"int", "decimal", "float"},
    "bool": {"bool"},
    "text": {"string"},
    "date": {"date", "timestamp"},
    "timestamp": {"timestamp", "date"},
    "time": {"time"},
    "binary": {"binary"},
}


@dataclass(frozen=True)
class TargetColumn:
    name: str
    quoted: str
    type_name: str
    type_oid: int
    identity: bool

    @property
    def is_super(self) -> bool:
        return self.type_oid == _JSONB


@dataclass(frozen=True)
class LoadPlan:
    sql: str
    payload: bytes
    rows: int


def target_columns(rows: Sequence[Sequence[str | None]]) -> tuple[str, list[TargetColumn]]:
    """(regclass text, columns) from the rows of :data:`COLUMNS_SQL`."""
    columns = [TargetColumn(str(r[0]), str(r[1]), str(r[2]), int(str(r[3])), r[4] == "true") for r in rows]
    return (str(rows[0][5]) if rows else ""), columns


def plan_load(
    command: CopyCommand, table: str, columns: Sequence[TargetColumn], files: Sequence[tuple[str, pa.Table]]
) -> LoadPlan:
    targets = copy_targets(command, table, columns)
    records: list[dict[str, Any]] = []
    for url, data in files:
        used = _check_file(command, url, data, targets)
        names = [t.name for t in used]
        values = [_column_values(data.column(i), target) for i, target in enumerate(used)]
        for row in zip(*values, strict=True):
            records.append({name: value for name, value in zip(names, row, strict=True) if value is not None})
    names = ", ".join(t.quoted for t in targets)
    source = f"json_populate_recordset(NULL::{table}, $1::json)"
    sql = f"INSERT INTO {table} ({names}) SELECT {names} FROM {source}"
    payload = json.dumps(records, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    return LoadPlan(sql, payload, len(records))


def copy_targets(command: CopyCommand, table: str, columns: Sequence[TargetColumn]) -> list[TargetColumn]:
    if command.columns is None:
        return [c for c in columns if command.explicit_ids or not c.identity]
    by_name = {c.name: c for c in columns}
    missing = [name for name in command.columns if name not in by_name]
    if missing:
        raise CommandError(f'column "{missing[0]}" of relation "{table}" does not exist')
    return [by_name[name] for name in command.columns]


def _check_file(
    command: CopyCommand, url: str, data: pa.Table, targets: list[TargetColumn]
) -> list[TargetColumn]:
    if data.num_columns != len(targets) and not (command.fill_record and data.num_columns < len(targets)):
        raise CommandError(
            "Unmatched number of columns between table and file. "
            f"Table columns: {len(targets)}, Data columns: {data.num_columns}, File name: {url}"
        )
    used = targets[: data.num_columns]
    for parquet_field, target in zip(data.schema, used, strict=True):
        if target.is_super:
            if not command.serialize_to_json:
                raise CommandError(
                    f"Assert: Unreachable - Invalid type: 4000 (column {target.name} is SUPER: "
                    "COPY FORMAT AS PARQUET into a SUPER column needs SERIALIZETOJSON)"
                )
            continue
        family = _arrow_family(parquet_field.type)
        wanted = FAMILIES.get(target.type_oid)
        if family == "null" or (wanted is None and family != "nested"):
            continue
        if wanted is None or family not in _ACCEPTS[wanted]:
            raise CommandError(
                f"Spectrum Scan Error: File '{url}' has an incompatible Parquet schema for column "
                f"'{url}.{parquet_field.name}'. Column type: {target.type_name}, "
                f"Parquet schema: {parquet_field.type}"
            )
    return used


def _arrow_family(kind: pa.DataType) -> str:
    if pa.types.is_integer(kind):
        return "int"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_decimal(kind):
        return "decimal"
    if pa.types.is_boolean(kind):
        return "bool"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_date(kind):
        return "date"
    if pa.types.is_timestamp(kind):
        return "timestamp"
    if pa.types.is_time(kind):
        return "time"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return "binary"
    if pa.types.is_null(kind):
        return "null"
    if isinstance(kind, pa.ExtensionType):
        return _arrow_family(kind.storage_type)
    return "nested"


def _column_values(column: pa.ChunkedArray, target: TargetColumn) -> list[Any]:
    """A Parquet column as JSON-ready Python values (converted column-wise where Arrow can)."""
    kind = column.type
    if isinstance(kind, pa.ExtensionType):
        column = pa.chunked_array([chunk.storage for chunk in column.chunks], type=kind.storage_type)
        kind = kind.storage_type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        column = column.cast(pa.timestamp(kind.unit, "UTC"))  # Parquet's UTC-adjusted instants, as UTC
    if pa.types.is_temporal(kind) or (pa.types.is_decimal(kind) and not target.is_super):
        return column.cast(pa.string()).to_pylist()
    values = column.to_pylist()
    if _arrow_family(kind) in ("int", "bool", "string", "null"):
        return values
    return [None if v is None else _json_value(v, kind, target) for v in values]


def _json_value(value: Any, kind: pa.DataType, target: TargetColumn) -> Any:
    """One Parquet value as the JSON that json_populate_recordset turns into the target's value."""
    if isinstance(kind, pa.ExtensionType):
        kind = kind.storage_type
    if pa.types.is_map(kind):
        return {str(k): _nullable(v, kind.item_type, target) for k, v in value}
    if pa.types.is_struct(kind):
        return {f.name: _nullable(value[f.name], f.type, target) for f in kind}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [_nullable(v, kind.value_type, target) for v in value]
    return _scalar(value, target.is_super)


def _nullable(value: Any, kind: pa.DataType, target: TargetColumn) -> Any:
    return None if value is None else _json_value(value, kind, target)


def _scalar(value: Any, into_super: bool) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Decimal):
        if into_super:
            return int(value) if value == value.to_integral_value() else float(value)
        return str(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).isoformat()  # Parquet's UTC-adjusted instants, as UTC
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"{value.total_seconds()} seconds"
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    return value
