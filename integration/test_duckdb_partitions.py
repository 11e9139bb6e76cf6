"""The conformance suite and the model tests on a warehouse without transactions, MERGE, CTEs or
window functions, atomic per partition only (harness/duckdb_partitions.py): the core's own partition
replace and retention end to end, reached through pieces as docs/plugins.md section 9 walks through;
the demo and `synclog runs` on it; and the suite's tests failing on swaps that are wrong, a target's
own swap included."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from harness.duckdb_partitions import (
    CAPABILITIES,
    REFUSED,
    SCHEME,
    TARGET_TYPE,
    PartitionedDuckDB,
    refusal,
    synclog_register_targets,
)
from pyspark.sql import SparkSession

from synclog.capabilities import SwapStrategy
from synclog.cli.main import main
from synclog.errors import ConfigError
from synclog.layouts.census import SYNC_LOG
from synclog.naming import Relation
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.contract import check_target_class
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBTarget
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.choice import OwnSwap
from synclog.targets.swaps.partition_replace import Partitioning, PartitionValue
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog_testing.conformance import (
    PortableConformance,
    WritesConformance,
)
from synclog_testing.crash_points import CrashSite, run_crash_points
from synclog_testing.outage import Outage, file_outage
from synclog_testing.swaps import DAY_1, DAY_2, SwapConformance, captured, log_rows


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


class TestPartitionedDuckDB(PortableConformance):  # no QUALIFY: a window function
    """The whole suite with the core's own swap and retention."""

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, SCHEME, "logs.duckdb")


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("WITH c AS (SELECT 1) SELECT * FROM c", "a WITH query (CTE)"),
        ("SELECT * FROM (WITH c AS (SELECT 1) SELECT * FROM c) AS u", "a WITH query (CTE)"),
        ("SELECT LAG(a) OVER (ORDER BY a) FROM t", "a window function"),
        ("SELECT 1 FROM t WHERE EXISTS (SELECT 1 FROM s)", "EXISTS"),
        ("SELECT 1 FROM t WHERE a = TRUE", "a boolean literal"),
        ("SELECT COALESCE(a, FALSE) FROM t", "a boolean literal"),
        ("SELECT 1 FROM t WHERE a IS NOT DISTINCT FROM ?", "IS DISTINCT FROM"),
        ("SELECT CASE WHEN r.hit THEN 0 ELSE 1 END FROM r", "a CASE on a boolean"),
        ("MERGE INTO t USING s ON 1 = 0 WHEN NOT MATCHED THEN INSERT VALUES (1)", "MERGE"),
        ("INSERT INTO t (a) VALUES (?)", "INSERT … VALUES (rows come as a data block)"),
        ("DROP VIEW IF EXISTS v", "DROP VIEW (a view is dropped as a table)"),
        ("CREATE OR REPLACE VIEW v AS SELECT 1", "CREATE OR REPLACE"),
    ],
)
def test_the_stand_in_refuses_what_the_warehouse_does_not_parse(sql: str, refused: str) -> None:
    assert refusal(sql) == refused


def test_the_stand_in_takes_what_the_cores_sql_is_made_of() -> None:
    """Comparisons, CASE on a predicate, IF [NOT] EXISTS, keywords inside literals and names."""
    taken = [
        "CREATE TABLE IF NOT EXISTS t (a BIGINT)",
        "DROP TABLE IF EXISTS t",
        "SELECT SUM(CASE WHEN a = ? THEN 1 ELSE 0 END) FROM t WHERE 'WITH' <> \"TRUE\"",
        "INSERT INTO t (a) SELECT a FROM s WHERE (a = ? AND b BETWEEN ? AND ?) OR c IN (?, ?)",
    ]
    assert [refusal(sql) for sql in taken] == [None] * len(taken)
    assert set(REFUSED) >= {"a WITH query (CTE)", "a window function", "EXISTS", "a boolean literal"}


def test_a_partition_is_replaced_in_steps_and_rows_come_as_a_block(
    synclog_target_url: str, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`replace_partition` gives several statements (a scratch table filled, then swapped in);
    the versions table's row comes through `insert_rows`; the stage carries its table option."""
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = TARGET_TYPE.open(TargetURL.parse(synclog_target_url), settings)
    assert isinstance(target, PartitionedDuckDB)
    try:
        blocks: list[str] = []
        insert_rows = target.client.insert_rows

        def block(relation: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> int:
            blocks.append(relation)
            return insert_rows(relation, columns, rows)

        monkeypatch.setattr(target.client, "insert_rows", block)
        target.ensure([SYNC_LOG])
        assert blocks == [target.relation(SYNC_LOG).with_name("synclog_versions").render()]
        rows = Rows.local(spark, SYNC_LOG, log_rows([("a", 1, 10, 0, DAY_1), ("b", 1, 10, 1, DAY_2)]))
        with captured(target, monkeypatch) as sent:
            target.replace_rows(SYNC_LOG, rows, Keys.of_rows(SYNC_LOG, rows))
        kinds = [" ".join(sql.split()[:3]) for sql, _ in sent]
        assert any("ENGINE = Memory" in sql for sql, _ in sent), "the stage's table option"
        replaced = [k for k in kinds if k.startswith("REPLACE PARTITION")]
        assert len(replaced) == 2, kinds  # two days, each filled into a scratch table and swapped in
        assert kinds.count('INSERT INTO "temp"."_synclog_scratch"') == 2, kinds
        log = target.relation(SYNC_LOG).render()
        found = target.client.fetch(f"SELECT log_id FROM {log} ORDER BY 1")
        assert found == [("a",), ("b",)]
    finally:
        target.close()


def test_the_demo_and_runs_answer_or_say_what_is_missing_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a warehouse without CTEs or window functions the demo answers every question it can,
    says in one line which capability the rest need, and reaches its retention; `synclog runs`
    answers (its SQL needs neither)."""
    url = f"{SCHEME}:///{tmp_path / 'demo.duckdb'}"
    now = datetime(2026, 3, 1, 8, tzinfo=UTC).isoformat()
    assert main(["demo", "--scale", "0.01", "--days", "1", "--now", now, "--target", url]) == 0
    printed = capsys.readouterr().out
    segment = printed.split("Who entered and who left the segment", 1)[1].split("\n\n", 1)[0]
    assert segment.splitlines()[1:] == [
        "  not asked: this target has no WITH queries (common table expressions) (ctes = no)"
    ]
    assert "Which rows does each model hold now?" in printed and "current_rows" in printed
    assert re.search(r"^retention: [\d,]+ rows", printed, re.M)
    assert main(["runs", "--target", url, "--sync", "1234"]) == 0
    assert "5678" in capsys.readouterr().out


OWN_SWAP = replace(CAPABILITIES, swap=SwapStrategy.OWN)
"""The stand-in's capabilities with a swap of the target's own (`OwnSwap`)."""


class _DropsReplacedDays(PartitionedDuckDB, OwnSwap):
    """A wrong swap of its own: the days holding the replaced rows are emptied whole (other
    batches' rows with them), then the staged rows are inserted."""

    def swap_statements(
        self, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
    ) -> list[Statement]:
        matched, params = self.dialect.keys_sql(keys, "t")
        columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
        insert = f"INSERT INTO {relation.render()} ({columns}) SELECT {columns} FROM {stage.render()}"
        if table.time_column is None:
            return [(f"DELETE FROM {relation.render()} AS t WHERE {matched}", params), (insert, ())]
        day = f"CAST(t.{self.dialect.quote(table.time_column)} AS DATE)"
        replaced = f"SELECT {day} FROM {relation.render()} AS t WHERE {matched}"
        return [(f"DELETE FROM {relation.render()} AS t WHERE {day} IN ({replaced})", params), (insert, ())]


class _InsertsOnly(PartitionedDuckDB, OwnSwap):
    """A wrong swap of its own: the staged rows are inserted, nothing is replaced."""

    def swap_statements(
        self, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
    ) -> list[Statement]:
        columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
        return [(f"INSERT INTO {relation.render()} ({columns}) SELECT {columns} FROM {stage.render()}", ())]


class _NoTransaction(DuckDBTarget):
    """A wrong swap: the DELETE and the INSERT commit one by one."""

    def run_swap(self, statements: Sequence[Statement]) -> None:
        for sql, params in statements:
            self.client.execute(sql, params)


class _DropsThenInsertsADay(PartitionedDuckDB):
    """A swap that is not atomic: a day's new rows are put together in a scratch table, then the
    day is dropped and the scratch rows inserted, two statements apart (rows gone if the writer
    dies in between)."""

    def replace_partition(
        self,
        relation: Relation,
        partitioning: Partitioning | None,
        value: PartitionValue,
        rows: str,
        params: Sequence[Any],
    ) -> list[Statement]:
        steps = super().replace_partition(relation, partitioning, value, rows, params)
        replaced = _REPLACE_STEP.match(steps[-1][0])
        assert replaced is not None, steps[-1][0]
        where, scratch = replaced["where"] or "1 = 1", replaced["scratch"]
        return [
            *steps[:-1],
            (f"DELETE FROM {relation.render()} AS t WHERE {where}", steps[-1][1]),
            (f"INSERT INTO {relation.render()} SELECT * FROM {scratch}", ()),
        ]


_REPLACE_STEP = re.compile(
    r"^REPLACE (?:PARTITION OF|TABLE) \S+ (?:WHERE (?P<where>.+) )?FROM (?P<scratch>\S+)$", re.S
)


def test_a_crash_between_the_steps_of_a_partition_swap_fails_one_that_is_not_atomic(
    tmp_path: Path, spark: SparkSession
) -> None:
    """The crash-point test (a negative control): a day dropped, then inserted, loses the other
    sync's rows of that day when the writer dies in between; the flush cannot bring them back."""
    url = TargetURL.parse(f"{SCHEME}:///{tmp_path / 'wrong.duckdb'}")
    check_target_class(_DropsThenInsertsADay.__name__, _DropsThenInsertsADay, CAPABILITIES)
    site = CrashSite(
        str(url),
        lambda settings: _DropsThenInsertsADay(url, settings, CAPABILITIES),
        TargetSettings(),
        Location.parse(str(tmp_path / "storage")),
        spark,
        tmp_path,
    )
    log = SYNC_LOG.name

    def between(seen: list[str]) -> list[int]:
        return [
            at
            for at, what in enumerate(seen)
            if what.startswith("after execute_bound DELETE") and log in what
        ][:1]

    lost = r"the log tables differ from the reference model:\ncensus\.sync_log: missing x1: .*'kept-0-"
    with pytest.raises(
        AssertionError, match=r"after a crash at boundary \d+ \(after execute_bound DELETE .*\), " + lost
    ):
        run_crash_points(site, between)


def _open(kind: type[DuckDBTarget], tmp_path: Path) -> DuckDBTarget:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    partitioned = issubclass(kind, PartitionedDuckDB)
    capabilities = OWN_SWAP if partitioned else DUCKDB
    scheme = SCHEME if partitioned else "duckdb"
    check_target_class(kind.__name__, kind, capabilities)
    return kind(TargetURL.parse(f"{scheme}:///{tmp_path / 'wrong.duckdb'}"), settings, capabilities)


def _fails(
    kind: type[DuckDBTarget], tmp_path: Path, check: Callable[[DuckDBTarget], None], because: str
) -> None:
    """`check` (a conformance test) fails on a target of the wrong `kind`, `because` its
    assertion says so (not an assertion of its set-up)."""
    target = _open(kind, tmp_path)
    try:
        with pytest.raises(AssertionError, match=because):
            check(target)
    finally:
        target.close()


def test_a_replay_on_a_later_day_fails_a_swap_that_empties_the_replaced_days(
    tmp_path: Path, spark: SparkSession
) -> None:
    writes = WritesConformance()
    _fails(
        _DropsReplacedDays,
        tmp_path,
        lambda t: writes.test_replay_of_a_batch_with_a_later_batch_time(t, spark),
        "the replay changed rows it does not replace",
    )


def test_the_swap_tests_run_on_a_targets_own_swap_and_fail_a_wrong_one(
    tmp_path: Path, spark: SparkSession
) -> None:
    """A target with a swap of its own is held to the swap tests, judged by what the table holds:
    one that replaces nothing fails them (they are not skipped)."""
    swaps = SwapConformance()
    _fails(
        _InsertsOnly,
        tmp_path,
        lambda t: swaps.test_a_swap_replaces_by_key_and_by_scope(t, spark),
        "the batch written again left rows it replaces",
    )


def test_a_swap_failing_part_way_fails_a_swap_outside_a_transaction(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = WritesConformance()
    _fails(
        _NoTransaction,
        tmp_path,
        lambda t: writes.test_a_swap_failing_part_way_keeps_the_old_rows_and_a_replay_converges(
            t, spark, monkeypatch
        ),
        "the failed swap changed the log",
    )
