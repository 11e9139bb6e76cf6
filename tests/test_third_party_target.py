"""A third-party target that is no `SqlTarget`: the core asks a target what it can do (`stages`,
`json_text_sql`, `query`), never which class it is, so such a target writes and is tracked."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from synclog.capabilities import Capabilities
from synclog.config import Config
from synclog.layouts.census import SYNC_LOG
from synclog.model import RunStatus
from synclog.storage.location import Location
from synclog.targets.base import Cutoffs, Target, TargetSettings
from synclog.targets.duckdb import CAPABILITIES, DuckDBTarget
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.staging import Stages
from synclog.targets.tables import TableSpec
from synclog.tracking import RecordQuery, RunQuery, find_records, find_runs
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import make_records, make_run, person_rows


class Wrapping(Target):
    """A target by composition: it holds a DuckDB file (and, if `staged`, offers its stages)."""

    def __init__(self, path: Path, settings: TargetSettings, *, staged: bool) -> None:
        super().__init__(TargetURL.parse(f"wrapped:///{path}"), settings, CAPABILITIES)
        self.inner = DuckDBTarget(TargetURL.parse(f"duckdb:///{path}"), settings, CAPABILITIES)
        self.staged = staged
        self.replaced: list[str] = []
        """The tables loaded through `replace_rows`, in order."""

    def stages(self) -> Stages | None:
        return self.inner.stages() if self.staged else None

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        self.inner.ensure(tables)

    def replace_rows(self, table: TableSpec, rows: Rows, keys: Keys) -> int:
        self.replaced.append(table.name)
        return self.inner.replace_rows(table, rows, keys)

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        return self.inner.delete_expired(table, cutoffs)

    def read_rows(
        self, table: TableSpec, sync_id: int, spark: SparkSession
    ) -> AbstractContextManager[DataFrame | None]:
        return self.inner.read_rows(table, sync_id, spark)

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        return self.inner.query(sql, params)

    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        return self.inner.existing_tables(tables)

    def close(self) -> None:
        self.inner.close()


PEOPLE = [
    ("ann@example.com", "upsert", "succeeded", 1),
    ("bob@example.com", "upsert", "rejected", 1),
    ("cat@example.com", "delete", "succeeded", 1),
]
"""One batch of three records: two succeeded, one rejected (tracked as such, by hand)."""


@pytest.mark.parametrize("staged", [False, True], ids=["without-stages", "with-stages"])
def test_a_target_that_is_no_sql_target_writes_and_is_tracked(
    staged: bool, spark: SparkSession, tmp_path: Path
) -> None:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = Wrapping(tmp_path / "wrapped.duckdb", settings, staged=staged)
    capabilities: Capabilities = target.capabilities
    assert capabilities.layouts[0] == "census"
    run = make_run(sync_id=7, sync_run_id=70, status=RunStatus.SUCCEEDED)
    with SyncLog(target, Config(storage=settings.storage), spark) as log:
        result = log.write_run(run, make_records(spark, person_rows(run, PEOPLE)))
        assert result.statuses == {"succeeded": 2, "rejected": 1}
        # The write's one job stages sync_log where the target offers stages; else replace_rows loads it.
        assert (SYNC_LOG.name in target.replaced) is not staged
        assert target.replaced, "the run's own tables still load through replace_rows"

        found = find_records(target, RecordQuery(7))
        assert sorted((r["record_identifier"], r["status"], r["operation"]) for r in found.to_pylist()) == [
            ("ann@example.com", "succeeded", "upsert"),
            ("bob@example.com", "rejected", "upsert"),
            ("cat@example.com", "succeeded", "delete"),
        ]
        (logged,) = find_runs(target, RunQuery(7)).to_pylist()
        assert (logged["sync_run_id"], logged["status"], logged["records"]) == (70, "succeeded", 3)
        assert (logged["succeeded"], logged["rejected"], logged["invalid"]) == (2, 1, 0)
        assert target.query("SELECT COUNT(*) FROM census.sync_log").column(0).to_pylist() == [3]
