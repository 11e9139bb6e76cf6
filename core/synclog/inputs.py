"""Record results from files at the edges: Parquet (a file or a folder of them) and JSON lines.

Parquet is read by the executors through pyarrow, like everything synclog stores: whatever wrote
the file (Spark, pandas, pyarrow, another engine) and whatever its timestamp unit (pandas writes
nanoseconds, which Spark's reader refuses), the rows arrive with microsecond timestamps, the
precision every target stores. The driver reads only the first file's schema and the files'
footers. JSON lines go through Spark's JSON reader with the input schema, payloads as JSON text.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.errors import InputError, first_line
from synclog.records import INPUT_COLUMNS, INPUT_SCHEMA
from synclog.storage.files import read_frame
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile

JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}


def read_records(spark: SparkSession, path: str | Path) -> DataFrame:
    """Read record results from `path`; JSON lines get the input schema, payloads as JSON text."""
    path = Path(path).absolute()
    if not path.exists():
        raise InputError(f"records file {path} does not exist")
    if path.suffix in JSONL_SUFFIXES:
        return _read_jsonl(spark, path)
    return _read_parquet(spark, path)


def _read_parquet(spark: SparkSession, path: Path) -> DataFrame:
    files = [path] if path.is_file() else sorted(_parquet_files(path))
    if not files:
        raise InputError(f"records folder {path} holds no .parquet files")
    try:
        schema = _microseconds(pq.read_schema(files[0]))
        stored = tuple(
            StoredFile(str(f.relative_to(path.parent)), pq.read_metadata(f).num_rows) for f in files
        )
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read records {path}: {first_line(exc)}") from None
    manifest = Manifest(Location(root=str(path.parent)), stored)
    return read_frame(spark, manifest, from_arrow_schema(schema))


def _parquet_files(folder: Path) -> list[Path]:
    """The Parquet files under `folder`, but hidden ones and Spark's markers (`_SUCCESS`, `.crc`)."""
    return [
        f
        for f in folder.rglob("*.parquet")
        if not any(part.startswith((".", "_")) for part in f.relative_to(folder).parts)
    ]


def _microseconds(schema: pa.Schema) -> pa.Schema:
    """`schema` with every nanosecond timestamp made a microsecond one (Spark's precision)."""
    return pa.schema(
        [
            f.with_type(pa.timestamp("us", tz=f.type.tz))
            if pa.types.is_timestamp(f.type) and f.type.unit == "ns"
            else f
            for f in schema
        ]
    )


def _read_jsonl(spark: SparkSession, path: Path) -> DataFrame:
    try:
        present = set(spark.read.json(str(path)).columns)
    except AnalysisException as exc:
        raise InputError(f"cannot read records {path}: {exc.getMessage().splitlines()[0]}") from None
    if "_corrupt_record" in present:
        raise InputError(f"records {path}: a line is not a JSON object")
    for column in INPUT_COLUMNS:
        if column.required and column.name not in present:
            raise InputError(f"record results: missing column {column.name!r}")
    schema = [f for f in INPUT_SCHEMA.fields if f.name in present]
    return spark.read.schema(INPUT_SCHEMA.__class__(schema)).option("mode", "FAILFAST").json(str(path))
