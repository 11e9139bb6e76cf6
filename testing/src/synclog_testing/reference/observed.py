"""What a target's tables hold, read back in the reference model's shape, and compared with it.

Rows are read with plain SQL (`Target.query`) or, for the lake, straight from its files, then
normalised alike on both sides: column names lower case, timestamps as UTC, JSON as canonical
text (keys sorted, integral numbers below 2^53 as integers, other numbers as floats),
`_census_logged_at` (the time of the load) left out, a column a table has not gained yet
(`split_group`) read as NULL.
"""

from __future__ import annotations

import itertools
import json
import posixpath
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from synclog.layouts import census, hightouch, lake
from synclog.model import as_utc
from synclog.targets.base import Target
from synclog.targets.tables import ColumnType, TableSpec

Rows = Counter[tuple[tuple[str, Any], ...]]
_READS = itertools.count()

LEFT_OUT = frozenset({"_census_logged_at"})
"""Columns that hold the time of the load, not anything the records or runs say."""

SQL_TABLES: Mapping[str, tuple[TableSpec, str]] = {
    "census.sync_log": (census.SYNC_LOG, "sync_id"),
    "census.synclog_runs": (census.RUNS, "sync_id"),
    "census.source_objects": (census.SOURCE_OBJECTS, "id"),
    "census.destinations": (census.DESTINATIONS, "id"),
    "census.destination_objects": (census.DESTINATION_OBJECTS, "id"),
    "hightouch.sync_changelog": (hightouch.CHANGELOG, "sync_id"),
    "hightouch.sync_snapshot": (hightouch.SNAPSHOT, "sync_id"),
    "hightouch.sync_runs": (hightouch.RUNS, "sync_id"),
}
"""Each SQL table the model knows, and the column its rows are picked by."""
OPTIONAL = {"hightouch.sync_changelog": ("split_group",), "hightouch.sync_snapshot": ("split_group",)}
"""Columns a table gains only once a sync uses them."""
FACTS = ("source_objects", "destinations", "destination_objects")


def canonical_json(value: Any) -> str | None:
    """JSON text (or a parsed value) as one text form: keys sorted, numbers as `_integral` gives them."""
    if value is None:
        return None
    parsed = json.loads(value) if isinstance(value, str) else value
    return json.dumps(_integral(parsed), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _integral(value: Any) -> Any:
    """Numbers in one form: integral ones a double holds exactly as int, others as float (a
    warehouse's exact numeric 10**30 and a payload's 1e30 alike)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        exact = value.is_integer() if isinstance(value, float) else True
        return int(value) if exact and abs(value) < 2**53 else float(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def normalised(rows: Iterable[Mapping[str, Any]], spec: TableSpec, extra: Sequence[str] = ()) -> Rows:
    """`rows` as a multiset, each value in the form its column's type gives it on both sides."""
    types = {c.name: c.type for c in spec.columns}
    found: Rows = Counter()
    for row in rows:
        values = {k.lower(): v for k, v in row.items() if k.lower() not in LEFT_OUT}
        for name in extra:
            values.setdefault(name, None)
        found[tuple(sorted((k, _value(types.get(k), v)) for k, v in values.items()))] += 1
    return found


def _value(kind: ColumnType | None, value: Any) -> Any:
    if value is None:
        return None
    if kind is ColumnType.JSON:
        return canonical_json(value)
    if kind is ColumnType.TIMESTAMP:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else value
        return as_utc(moment)
    if kind in (ColumnType.BIGINT, ColumnType.INTEGER):
        return int(value)
    if kind is ColumnType.BOOLEAN:
        return bool(value)
    return value


def expected(model: Mapping[str, Rows]) -> dict[str, Rows]:
    """The model's tables, normalised as the observed ones are."""
    specs = {**{name: spec for name, (spec, _) in SQL_TABLES.items()}, **LAKE_TABLES}
    return {
        name: normalised((dict(row) for row in rows.elements()), specs[name], OPTIONAL.get(name, ()))
        for name, rows in model.items()
    }


def sql_tables(
    target: Target,
    names: Iterable[str],
    syncs: Sequence[int],
    ids: Sequence[int],
    partition_columns: Collection[str] = (),
) -> dict[str, Rows]:
    """The rows of the SQL tables `names` of syncs `syncs` (metadata tables: objects `ids`),
    without the `partition_columns` the target's storage adds after a table's own."""
    found: dict[str, Rows] = {}
    for name in names:
        spec, column = SQL_TABLES[name]
        relation = target.relation(target.table_spec(spec), spec.view)
        keys = syncs if column == "sync_id" else ids
        if not target.existing_tables([spec]) or not keys:
            found[name] = Counter()
            continue
        marks = ", ".join([target.dialect.placeholder] * len(keys))
        # A text of its own each time: a driver that prepares a query it sees again (psycopg)
        # would refuse `*` once the table gained a column (split_group).
        fresh = f"-- read {next(_READS)}\n"
        sql = f"{fresh}SELECT * FROM {relation.render()} WHERE {column} IN ({marks})"
        table = target.query(sql, list(keys))
        table = table.drop_columns([c for c in table.column_names if c.lower() in partition_columns])
        found[name] = normalised(table.to_pylist(), spec, OPTIONAL.get(name, ()))
    return found


LAKE_TABLES: Mapping[str, TableSpec] = {
    "lake.records": lake.RECORDS,
    "lake.metadata": lake.RUN_METADATA,
    "lake.source_objects": lake.SOURCE_OBJECTS,
    "lake.destinations": lake.DESTINATIONS,
    "lake.destination_objects": lake.DESTINATION_OBJECTS,
}


def lake_tables(
    fs: pafs.FileSystem, root: str, folders: Iterable[str], facts: Iterable[str]
) -> dict[str, Rows]:
    """The lake's files under the run folders `folders` (`sync_tracking_datasets/ORG/SYNC`) and
    the fact files `facts` (relative paths), read with pyarrow; each row carries its `path`."""
    records: list[dict[str, Any]] = []
    metadata: list[dict[str, Any]] = []
    for folder in folders:
        selector = pafs.FileSelector(posixpath.join(root, folder), recursive=True, allow_not_found=True)
        for info in fs.get_file_info(selector):
            if not info.is_file or "/." in info.path or "/_" in info.path:
                continue
            path = posixpath.relpath(info.path, root)
            if path.endswith("/metadata.json"):
                with fs.open_input_stream(info.path) as stream:
                    metadata.append({"path": path, **json.loads(stream.read().decode())})
            elif path.endswith(".parquet"):
                rows = pq.read_table(info.path, filesystem=fs).to_pylist()
                records.extend({"path": path, **row} for row in rows)
    found = {
        "lake.records": normalised(records, lake.RECORDS),
        "lake.metadata": normalised(metadata, lake.RUN_METADATA),
    }
    for table in FACTS:
        rows = []
        for path in facts:
            if f"/{table}/" not in path:
                continue
            full = posixpath.join(root, path)
            if fs.get_file_info(full).type == pafs.FileType.File:
                rows.extend({"path": path, **row} for row in pq.read_table(full, filesystem=fs).to_pylist())
        found[f"lake.{table}"] = normalised(rows, LAKE_TABLES[f"lake.{table}"])
    return found


def observed_tables(
    target: Target,
    names: Iterable[str],
    syncs: Sequence[tuple[int, int, Sequence[int]]],
    partition_columns: Collection[str] = (),
    lake_root: tuple[pafs.FileSystem, str] | None = None,
) -> dict[str, Rows]:
    """What `target` holds of `syncs`, each (org_id, sync_id, its object ids: the source, the
    source object, the destination, the destination object): the SQL tables `names`, or, given
    the lake's filesystem and root, the lake's run folders and fact files."""
    if lake_root is not None:
        fs, root = lake_root
        folders = [f"sync_tracking_datasets/{org}/{sync}" for org, sync, _ in syncs]
        facts = [
            f"metadata/{org}/{table}/{object_id}.parquet"
            for org, _, ids in syncs
            for table, object_id in zip(FACTS, ids[1:4], strict=True)
        ]
        return lake_tables(fs, root, folders, facts)
    ids = [i for _, _, object_ids in syncs for i in object_ids]
    return sql_tables(target, names, [sync for _, sync, _ in syncs], ids, partition_columns)


def differences(expected: Mapping[str, Rows], observed: Mapping[str, Rows]) -> list[str]:
    """Per table, the rows only the model has and the rows only the target has."""
    lines = []
    for name in sorted(set(expected) | set(observed)):
        want, got = expected.get(name, Counter()), observed.get(name, Counter())
        missing, unexpected = want - got, got - want
        for label, rows in (("missing", missing), ("unexpected", unexpected)):
            for row, n in sorted(rows.items(), key=str):
                lines.append(f"{name}: {label} x{n}: {dict(row)}")
    return lines
