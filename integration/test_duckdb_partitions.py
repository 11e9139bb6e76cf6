"""The conformance suite and the model tests on a warehouse without transactions and without MERGE,
atomic per partition only (harness/duckdb_partitions.py): the core's partition replace end to end,
as docs/plugins.md walks through it; and the suite's replay tests failing on swaps that are wrong."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from harness.duckdb_partitions import SCHEME, TARGET_TYPE, PartitionedDuckDB, synclog_register_targets
from pyspark.sql import SparkSession

from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import CAPABILITIES, DuckDBTarget
from synclog.targets.sql_statements import Statement
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog_testing.conformance import TargetConformance, WritesConformance
from synclog_testing.outage import Outage, file_outage


@pytest.fixture(scope="module", autouse=True)
def registered() -> None:
    """The stand-in registered through its hook, as an installed plugin's entry point would."""
    try:
        registry().for_url(TargetURL.parse(TARGET_TYPE.example_url))
    except ConfigError:
        synclog_register_targets(registry().register)


@pytest.fixture
def synclog_target_url(tmp_path: Path) -> Iterator[str]:
    yield f"{SCHEME}:///{tmp_path / 'conformance.duckdb'}"


class TestPartitionedDuckDB(TargetConformance):
    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, SCHEME, "logs.duckdb")


class _DropsReplacedDays(PartitionedDuckDB):
    """A wrong swap: the days holding the replaced rows are emptied whole (other batches' rows
    with them), then the staged rows are inserted."""

    def swap_statements(
        self, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
    ) -> list[Statement]:
        if table.time_column is None or scope:
            return super().swap_statements(table, relation, stage, scope)
        day = f"CAST(t.{self.quote(table.time_column)} AS DATE)"
        on = " AND ".join(f"s.{self.quote(k)} = t.{self.quote(k)}" for k in table.replace_key)
        matched = f"EXISTS (SELECT 1 FROM {stage.render()} AS s WHERE {on})"
        replaced = f"SELECT {day} FROM {relation.render()} AS t WHERE {matched}"
        columns = ", ".join(self.quote(c) for c in table.column_names())
        return [
            (f"DELETE FROM {relation.render()} AS t WHERE {day} IN ({replaced})", ()),
            (f"INSERT INTO {relation.render()} ({columns}) SELECT {columns} FROM {stage.render()}", ()),
        ]


class _NoTransaction(DuckDBTarget):
    """A wrong swap: the DELETE and the INSERT commit one by one."""

    def run_swap(self, statements: Sequence[Statement]) -> None:
        for sql, params in statements:
            self.execute(sql, params)


def _open(kind: type[DuckDBTarget], tmp_path: Path) -> DuckDBTarget:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    partitioned = issubclass(kind, PartitionedDuckDB)
    capabilities = TARGET_TYPE.capabilities if partitioned else CAPABILITIES
    scheme = SCHEME if partitioned else "duckdb"
    return kind(TargetURL.parse(f"{scheme}:///{tmp_path / 'wrong.duckdb'}"), settings, capabilities)


def test_a_replay_on_a_later_day_fails_a_swap_that_empties_the_replaced_days(
    tmp_path: Path, spark: SparkSession
) -> None:
    target = _open(_DropsReplacedDays, tmp_path)
    try:
        with pytest.raises(AssertionError, match="the replay changed rows it does not replace"):
            WritesConformance().test_replay_of_a_batch_with_a_later_batch_time(target, spark)
    finally:
        target.close()


def test_a_swap_failing_part_way_fails_a_swap_outside_a_transaction(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _open(_NoTransaction, tmp_path)
    try:
        with pytest.raises(AssertionError, match="the failed swap changed the log"):
            WritesConformance().test_a_swap_failing_part_way_keeps_the_old_rows_and_a_replay_converges(
                target, spark, monkeypatch
            )
    finally:
        target.close()
