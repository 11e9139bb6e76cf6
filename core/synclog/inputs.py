"""Record results from files at the edges: Parquet (file or folder) and JSON lines."""

from __future__ import annotations

from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from synclog.errors import InputError
from synclog.records import INPUT_COLUMNS, INPUT_SCHEMA

JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}


def read_records(spark: SparkSession, path: str | Path) -> DataFrame:
    """Read record results from `path`; JSON lines get the input schema, payloads as JSON text."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"records file {path} does not exist")
    try:
        if path.suffix in JSONL_SUFFIXES:
            return _read_jsonl(spark, path)
        return spark.read.parquet(str(path))
    except AnalysisException as exc:
        raise InputError(f"cannot read records {path}: {exc.getMessage().splitlines()[0]}") from None


def _read_jsonl(spark: SparkSession, path: Path) -> DataFrame:
    present = set(spark.read.json(str(path)).columns)
    if "_corrupt_record" in present:
        raise InputError(f"records {path}: a line is not a JSON object")
    for column in INPUT_COLUMNS:
        if column.required and column.name not in present:
            raise InputError(f"record results: missing column {column.name!r}")
    schema = [f for f in INPUT_SCHEMA.fields if f.name in present]
    return spark.read.schema(INPUT_SCHEMA.__class__(schema)).option("mode", "FAILFAST").json(str(path))
