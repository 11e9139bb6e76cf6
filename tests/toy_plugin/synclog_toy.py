"""A third-party target as a plugin author would write it: tables as Parquet files in a folder.

`toy:///PATH` keeps each table in `PATH/<schema>.<table>.parquet`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

import synclog
from synclog.layouts.table import Rows, TableSpec
from synclog.staging import parquet_stage
from synclog.targets.base import Cutoffs

CAPABILITIES = synclog.Capabilities(json_type="STRING", transactions=False, views=False)


class ToyTarget(synclog.Target):
    capabilities = CAPABILITIES

    def __init__(self, url: Any, settings: synclog.TargetSettings) -> None:
        super().__init__(url, settings)
        self.folder = Path(url.path)

    def _file(self, table: TableSpec) -> Path:
        return self.folder / f"{self.relation(table)}.parquet"

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)

    def replace_rows(self, table: TableSpec, rows: Rows) -> int:
        if isinstance(rows, DataFrame):
            with parquet_stage(rows) as files:
                incoming = pa.concat_tables([pq.read_table(f) for f in files])
        else:
            incoming = rows
        incoming = incoming.select(table.column_names())
        current = self._read(table)
        if current is not None:
            keys = pc.is_in(current.column(table.replace_key[0]), incoming.column(table.replace_key[0]))
            incoming = pa.concat_tables([current.filter(pc.invert(keys)), incoming.cast(current.schema)])
        pq.write_table(incoming, self._file(table))
        return incoming.num_rows

    def _read(self, table: TableSpec) -> pa.Table | None:
        return pq.read_table(self._file(table)) if self._file(table).exists() else None

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        return 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        raise synclog.TargetError("the toy target answers no SQL")

    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        return [t for t in tables if self._file(t).exists()]

    def close(self) -> None:
        pass


@synclog.hookimpl
def synclog_register_targets(register: Callable[[synclog.TargetType], None]) -> None:
    register(
        synclog.TargetType(
            name="toy",
            schemes=("toy",),
            capabilities=CAPABILITIES,
            summary="Parquet files in a folder (a test plugin)",
            opener=ToyTarget,
        )
    )
