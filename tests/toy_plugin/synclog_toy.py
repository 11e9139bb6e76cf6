"""A third-party target as a plugin author would write it: tables as Parquet files in a folder.

`toy:///PATH` keeps each table in `PATH/<schema>.<table>.parquet`.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import synclog
from synclog.targets.base import Cutoffs
from synclog.targets.rows import Rows
from synclog.targets.tables import TableSpec

SYNCLOG_PLUGIN_API = 1

CAPABILITIES = synclog.Capabilities(json_type="STRING", transactions=False, views=False, layouts=("census",))


class ToyTarget(synclog.Target):
    capabilities = CAPABILITIES

    def __init__(self, url: Any, settings: synclog.TargetSettings) -> None:
        super().__init__(url, settings)
        self.folder = Path(url.path)

    def _file(self, table: TableSpec) -> Path:
        return self.folder / f"{self.relation(table)}.parquet"

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)

    def replace_rows(self, table: TableSpec, rows: Rows, scope: Mapping[str, Any] | None = None) -> int:
        schema = table.arrow_schema()
        manifest = rows.stage(self.storage, f"toy/{uuid.uuid4().hex}", schema)
        incoming = pa.Table.from_batches(list(manifest.batches(schema)), schema=schema)
        current = self._read(table)
        if current is not None:
            if scope:
                matches = [pc.equal(current.column(name), value) for name, value in scope.items()]
                replaced = functools.reduce(pc.and_, matches)
            else:
                key = table.replace_key[0]
                replaced = pc.is_in(current.column(key), incoming.column(key))
            incoming = pa.concat_tables([current.filter(pc.invert(replaced)), incoming.cast(current.schema)])
        pq.write_table(incoming, self._file(table))
        return manifest.rows

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
