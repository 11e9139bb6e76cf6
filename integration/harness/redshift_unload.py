"""Carry out ``UNLOAD … FORMAT AS PARQUET``: the query's rows (Postgres text format) to Parquet parts on S3.

Names as Redshift gives them (one slice): ``<prefix>0000_part_00.parquet``, ``…_part_01`` … when
MAXFILESIZE splits the output; ``<prefix>000.parquet``, ``001`` … with PARALLEL OFF; the manifest
``<prefix>manifest`` lists ``{"url", "meta": {"content_length"}}`` per file (VERBOSE adds
``record_count``, a ``schema``, totals and the author). SUPER (jsonb) columns are written with
Parquet's JSON logical type, TIMESTAMPTZ as a plain timestamp in UTC (Redshift drops the zone).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .pg_wire import Field
from .redshift_commands import UnloadCommand
from .redshift_s3 import S3CommandError, list_objects, s3_error, split_url
from .result_rows import compact_json

__all__ = ["UnloadWriter", "check_destination"]

_ROW_GROUP_ROWS = 50_000
_NOT_EMPTY = (
    "Specified unload destination on S3 is not empty. Consider using a different bucket / prefix, "
    "manually removing the target files in S3, or using the ALLOWOVERWRITE option."
)
_TYPE_NAMES = {
    16: "boolean", 20: "bigint", 21: "smallint", 23: "integer", 700: "real", 701: "double precision",
    1700: "numeric", 25: "character varying", 1043: "character varying", 1042: "character", 1082: "date",
    1114: "timestamp without time zone", 1184: "timestamp with time zone", 3802: "super", 114: "super",
}  # fmt: skip


def check_destination(client: Any, command: UnloadCommand) -> None:
    """Fail before the query runs if the bucket is missing or files would be overwritten."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = split_url(command.prefix)
    try:
        client.head_bucket(Bucket=bucket)
    except (ClientError, BotoCoreError) as exc:
        raise s3_error(exc) from None
    if command.allow_overwrite or command.clean_path:
        return
    ours = re.compile(
        re.escape(prefix) + r"(\d{4}_part_\d{2}|\d{3})(\.parquet)?$|" + re.escape(prefix) + "manifest$"
    )
    if any(ours.match(key) for key, _ in list_objects(client, bucket, prefix)):
        raise S3CommandError(_NOT_EMPTY)


class UnloadWriter:
    """Collects text rows of the query's result and writes the Parquet parts and manifest."""

    def __init__(self, client: Any, command: UnloadCommand, fields: Sequence[Field]) -> None:
        self.client = client
        self.command = command
        self.fields = list(fields)
        self.bucket, self.prefix = split_url(command.prefix)
        self.schema = pa.schema([pa.field(f.name, _arrow_type(f)) for f in self.fields])
        self.decoders = [_decoder(f) for f in self.fields]
        self.pending: list[list[Any]] = [[] for _ in self.fields]
        self.parts: list[tuple[str, bytes, int]] = []
        self.sink: io.BytesIO | None = None
        self.writer: pq.ParquetWriter | None = None
        self.part_rows = 0
        self.rows = 0

    def add(self, values: Sequence[bytes | None]) -> None:
        for column, decode, raw in zip(self.pending, self.decoders, values, strict=True):
            column.append(None if raw is None else decode(raw.decode()))
        self.rows += 1
        if len(self.pending[0]) >= _ROW_GROUP_ROWS:
            self._write_row_group()

    def finish(self) -> int:
        """Upload the parts (and the manifest); the number of rows unloaded."""
        if self.pending and self.pending[0]:
            self._write_row_group()
        self._close_part()
        if self.command.clean_path:
            self._clean()
        for key, data, _ in self.parts:
            self._put(key, data)
        if self.command.manifest:
            self._put(self.prefix + "manifest", json.dumps(self._manifest(), indent=2).encode())
        return self.rows

    # ----------------------------------------------------------------------- internals

    def _write_row_group(self) -> None:
        arrays = [pa.array(values, type=f.type) for values, f in zip(self.pending, self.schema, strict=True)]
        if self.writer is None:
            self.sink = io.BytesIO()
            self.writer = pq.ParquetWriter(self.sink, self.schema, compression="snappy")
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self.part_rows += len(self.pending[0])
        self.pending = [[] for _ in self.fields]
        assert self.sink is not None
        if self.sink.tell() >= self.command.max_file_bytes:
            self._close_part()

    def _close_part(self) -> None:
        if self.writer is None or self.sink is None:
            return
        self.writer.close()
        number = len(self.parts)
        name = f"0000_part_{number:02d}.parquet" if self.command.parallel else f"{number:03d}.parquet"
        self.parts.append((self.prefix + name, self.sink.getvalue(), self.part_rows))
        self.writer, self.sink, self.part_rows = None, None, 0

    def _clean(self) -> None:
        for key, _ in list_objects(self.client, self.bucket, self.prefix):
            self.client.delete_object(Bucket=self.bucket, Key=key)

    def _put(self, key: str, data: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except (ClientError, BotoCoreError) as exc:
            raise s3_error(exc) from None

    def _manifest(self) -> dict[str, Any]:
        entries = []
        for key, data, rows in self.parts:
            meta: dict[str, int] = {"content_length": len(data)}
            if self.command.verbose:
                meta["record_count"] = rows
            entries.append({"url": f"s3://{self.bucket}/{key}", "meta": meta})
        manifest: dict[str, Any] = {"entries": entries}
        if self.command.verbose:
            manifest["schema"] = {
                "elements": [{"name": f.name, "type": _schema_type(f)} for f in self.fields]
            }
            manifest["meta"] = {
                "content_length": sum(len(d) for _, d, _ in self.parts),
                "record_count": self.rows,
            }
            manifest["author"] = {"name": "Amazon Redshift", "version": "1.0.0"}
        return manifest


def _numeric_dims(field: Field) -> tuple[int, int] | None:
    if field.typmod < 4:
        return None
    return (field.typmod - 4) >> 16, (field.typmod - 4) & 0xFFFF


def _arrow_type(field: Field) -> pa.DataType:
    oid = field.type_oid
    simple: dict[int, pa.DataType] = {
        16: pa.bool_(), 20: pa.int64(), 21: pa.int16(), 23: pa.int32(), 700: pa.float32(), 701: pa.float64(),
        1082: pa.date32(), 1114: pa.timestamp("us"), 1184: pa.timestamp("us"),
        3802: pa.json_(pa.string()), 114: pa.json_(pa.string()),
    }  # fmt: skip
    if oid in simple:
        return simple[oid]
    if oid == 1700:
        dims = _numeric_dims(field)
        return pa.decimal128(*dims) if dims and dims[0] <= 38 else pa.float64()
    return pa.string()


def _decoder(field: Field) -> Callable[[str], Any]:
    oid = field.type_oid
    if oid == 16:
        return lambda text: text == "t"
    if oid in (20, 21, 23):
        return int
    if oid in (700, 701):
        return float
    if oid == 1700:
        return Decimal if _numeric_dims(field) else float
    if oid == 1082:
        return dt.date.fromisoformat
    if oid == 1114:
        return dt.datetime.fromisoformat
    if oid == 1184:
        return lambda text: dt.datetime.fromisoformat(text).astimezone(dt.UTC).replace(tzinfo=None)
    if oid in (3802, 114):
        return compact_json
    return str


def _schema_type(field: Field) -> dict[str, Any]:
    kind: dict[str, Any] = {"base": _TYPE_NAMES.get(field.type_oid, "character varying")}
    if field.type_oid in (1043, 1042) and field.typmod >= 4:
        kind["dimensions"] = [field.typmod - 4]
    elif field.type_oid == 1700 and (dims := _numeric_dims(field)):
        kind["dimensions"] = list(dims)
    return kind
