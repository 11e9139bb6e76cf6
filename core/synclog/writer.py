"""The writer: validate record results, flag invalid records, and load every enabled layout."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.canonical import canonical_frame, canonical_schema
from synclog.config import Config
from synclog.layouts.base import LayoutContext
from synclog.layouts.registry import layout
from synclog.layouts.table import TableSpec
from synclog.model import Run
from synclog.plugins.manager import registry
from synclog.records import VIOLATION, check_columns, raise_violation
from synclog.retention import CleanupResult, cleanup
from synclog.runstore import PARTITION, RunStore
from synclog.spark import spark_session
from synclog.targets.base import Target

Progress = Callable[[str], None]


@dataclass(frozen=True)
class WriteResult:
    """What one write did: records by canonical status, rows loaded per table, seconds taken."""

    statuses: dict[str, int]
    loaded: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def records(self) -> int:
        """Records written."""
        return sum(self.statuses.values())


class SyncLog:
    """Writes the record results of sync runs into a target's log tables.

    >>> with SyncLog.open("duckdb:///logs.duckdb") as log:
    ...     log.write(run, records)            # records: a Spark DataFrame
    """

    def __init__(
        self,
        target: Target,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.target = target
        self.config = config or Config()
        self.spark = spark or spark_session()
        self.progress = progress or (lambda _message: None)
        self._ensured: set[TableSpec] = set()
        self.store = RunStore(self.config.state_dir)

    @classmethod
    def open(
        cls,
        target: str | None = None,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
    ) -> SyncLog:
        """Open the target named in `synclog.toml`, or given as a URL (DuckDB by default)."""
        config = config or Config.load()
        url, settings = config.resolve_target(target)
        return cls(registry().open(url, settings), config, spark, progress)

    def write(self, run: Run, records: DataFrame) -> WriteResult:
        """Log one or more batches of `run`. A batch written again replaces its earlier copy.

        Raises InputError, before anything is written, when `records` break the contract.
        """
        started = time.perf_counter()
        check_columns(records)
        canonical = canonical_frame(run, records, datetime.now(UTC))
        incoming = self.store.incoming(run)
        try:
            canonical.write.partitionBy(PARTITION).parquet(str(incoming))
            staged = self.spark.read.parquet(str(incoming))
            bad = staged.where(F.col(VIOLATION).isNotNull()).select(VIOLATION).first()
            if bad is not None:
                raise_violation(bad[0])
            statuses = {row[0]: row[1] for row in staged.groupBy("status").count().collect()}
        except BaseException:
            shutil.rmtree(incoming, ignore_errors=True)
            raise
        batches = self.store.commit(run, incoming)
        if not batches:
            return WriteResult(statuses={}, seconds=time.perf_counter() - started)
        frame = self.store.read(self.spark, run, batches).drop(VIOLATION)
        loaded = self._load(run, frame, "batch_rows")
        return WriteResult(statuses, loaded, time.perf_counter() - started)

    def finish(self, run: Run) -> dict[str, int]:
        """Write what needs the whole run (run tables, snapshots, run metadata); forget the run.

        Call it once the run has ended, with `run.status`, `finished_at` and `error` filled in.
        """
        if not self.store.has(run):
            frame = self.spark.createDataFrame([], canonical_schema())
        else:
            frame = self.store.read(self.spark, run).drop(VIOLATION)
        loaded = self._load(run, frame, "run_rows")
        self.store.drop(run)
        return loaded

    def write_run(self, run: Run, records: DataFrame) -> WriteResult:
        """Log a whole, finished run in one call: `write`, then `finish`."""
        result = self.write(run, records)
        loaded = {**result.loaded, **self.finish(run)}
        return WriteResult(result.statuses, loaded, result.seconds)

    def _load(self, run: Run, records: DataFrame, phase: str) -> dict[str, int]:
        settings = self.config.sync(run.sync_id)
        loaded: dict[str, int] = {}
        with ExitStack() as reads:

            def previous(table: TableSpec) -> DataFrame | None:
                if not settings.table(table.view or table.name).enabled:
                    return None
                return reads.enter_context(self.target.read_rows(table, run.sync_id, self.spark))

            ctx = LayoutContext(run, records, self.target.capabilities, previous)
            for name in settings.layouts:
                for table, rows in getattr(layout(name), phase)(ctx):
                    if not settings.table(table.view or table.name).enabled:
                        continue
                    if table not in self._ensured:
                        self.target.ensure([table])
                        self._ensured.add(table)
                    relation = str(self.target.relation(table, table.view))
                    loaded[relation] = self.target.replace_rows(table, rows)
                    scope = _run_scope(run, table.replace_key)
                    if loaded[relation] == 0 and scope:
                        # Nothing new for a table replaced per sync or run: clear what was there.
                        self.target.delete_rows(table, scope)
                    self.progress(f"  {relation}: {loaded[relation]:,} rows")
        return loaded

    def cleanup(self, now: datetime | None = None) -> CleanupResult:
        """Remove expired rows from the framework's tables, per each sync's retention."""
        return cleanup(self.target, self.config, now or datetime.now(UTC))

    def close(self) -> None:
        """Close the target connection (the Spark session stays up)."""
        self.target.close()

    def __enter__(self) -> SyncLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _run_scope(run: Run, key: tuple[str, ...]) -> dict[str, int] | None:
    """The key values of `run`'s rows when `key` holds only run-level columns, else None."""
    known = {"sync_id": run.sync_id, "sync_run_id": run.sync_run_id}
    return {name: known[name] for name in key} if set(key) <= set(known) else None
