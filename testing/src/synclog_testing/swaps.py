"""The swap strategies (`synclog.targets.swaps`), each with its own tests, run on every target
whose capabilities pick it: a SQL target's suite runs the tests of its strategy, and the rest skip.

Each test loads census `sync_log` rows straight through `replace_rows` and watches the swap's
statements on their way to `run_swap`, replaying or failing one as a client or a warehouse would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.layouts.census import SYNC_LOG
from synclog.targets.base import Target
from synclog.targets.rows import Rows
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps import delete_insert, insert_missing, merge, partition_replace
from synclog.targets.swaps.choice import Swap, swap_for
from synclog_testing.base import ConformanceBase

DAY_1 = datetime(2026, 3, 1, 8, tzinfo=UTC)
DAY_2 = datetime(2026, 3, 2, 9, tzinfo=UTC)
FIRST = [("l1", 1, 10, 0, DAY_1), ("l2", 1, 10, 0, DAY_1), ("l3", 1, 10, 1, DAY_2), ("l4", 2, 10, 0, DAY_1)]
"""(log_id, sync_id, sync_run_id, batch_number, batch_started_at) of the rows each test starts with:
sync 2 numbers its runs as sync 1 does, so l4 shares run 10 and batch 0 with l1 and l2."""
REPLACED = [("x", 1, 10, 0, DAY_1)]
"""Batch 0 of run 10 of sync 1 again, with one row: l1 and l2 go, l3 (batch 1) and l4 (sync 2's
run 10) stay; a replace key without `sync_id` would take l4 too."""
AFTER = ["l3", "l4", "x"]


def log_rows(rows: Sequence[tuple[str, int, int, int, datetime]]) -> list[dict[str, Any]]:
    names = ("log_id", "sync_id", "sync_run_id", "batch_number", "batch_started_at")
    return [dict(zip(names, row, strict=True)) for row in rows]


class SwapConformance(ConformanceBase):
    """Each swap strategy's own tests, on a target whose capabilities pick it."""

    def sql_target(self, target: Target, strategy: Swap | None = None) -> SqlTarget:
        """`target` as a SQL target whose swap is `strategy` (any, where None); else the test skips."""
        self.require(target, "census")
        if not isinstance(target, SqlTarget):
            pytest.skip(f"{target.url.scheme} runs no swap statements")
        if type(target).swap_statements is not SqlTarget.swap_statements:
            pytest.skip(f"{target.url.scheme} has a swap of its own")
        if strategy is not None and swap_for(target.capabilities) is not strategy:
            pytest.skip(f"{target.url.scheme}'s capabilities pick another swap strategy")
        target.ensure([SYNC_LOG])
        return target

    def load(self, target: SqlTarget, spark: SparkSession, rows: Sequence[Any], **scope: Any) -> int:
        return target.replace_rows(SYNC_LOG, Rows.local(spark, SYNC_LOG, log_rows(rows)), scope or None)

    def log_ids(self, target: SqlTarget) -> list[str]:
        relation = target.relation(SYNC_LOG).render()
        return sorted(str(r["log_id"]) for r in self.rows_sql(target, f"SELECT log_id FROM {relation}"))

    def watch_swaps(
        self, target: SqlTarget, monkeypatch: pytest.MonkeyPatch, run: Callable[[list[Statement]], None]
    ) -> list[list[Statement]]:
        """Send every swap's statements to `run` (given them and the target's own `run_swap`)
        instead of `run_swap`; return the swaps seen."""
        seen: list[list[Statement]] = []

        def watched(statements: Sequence[Statement]) -> None:
            seen.append(list(statements))
            run(list(statements))

        monkeypatch.setattr(target, "run_swap", watched)
        return seen

    def run_twice(self, target: SqlTarget, monkeypatch: pytest.MonkeyPatch) -> list[list[Statement]]:
        """Run every swap's statements twice, as replayed by a client; return the swaps seen."""
        run_swap = target.run_swap

        def replayed(statements: list[Statement]) -> None:
            run_swap(statements)
            run_swap(statements)

        return self.watch_swaps(target, monkeypatch, replayed)

    def failing(self, target: SqlTarget) -> Statement:
        """A statement every warehouse refuses: it reads a table that does not exist."""
        return f"SELECT * FROM {target.relation(SYNC_LOG).with_name('synclog_no_such_table').render()}", ()

    def test_a_swap_replaces_by_key_and_by_scope(self, target: Target, spark: SparkSession) -> None:
        """Whichever the strategy: a batch again replaces its rows only; a scope replaces every row
        matching it, also by no rows."""
        sql = self.sql_target(target)
        assert self.load(sql, spark, FIRST) == 4
        assert self.load(sql, spark, REPLACED) == 1
        assert self.log_ids(sql) == AFTER
        assert self.load(sql, spark, [], sync_id=1) == 0
        assert self.log_ids(sql) == ["l4"]
        assert self.load(sql, spark, [("y", 2, 21, 0, DAY_2)], sync_id=2) == 1
        assert self.log_ids(sql) == ["y"]

    def test_delete_and_insert_commit_together(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Delete-and-insert: [the lock,] the DELETE, the INSERT; the INSERT failing undoes the DELETE."""
        sql = self.sql_target(target, delete_insert.statements)
        self.load(sql, spark, FIRST)
        run_swap, failing = sql.run_swap, self.failing(sql)
        seen = self.watch_swaps(sql, monkeypatch, lambda statements: run_swap([*statements[:-1], failing]))
        with pytest.raises(Exception, match=r"(?i)synclog_no_such_table"):  # the warehouse's own error
            self.load(sql, spark, REPLACED)
        assert self.log_ids(sql) == ["l1", "l2", "l3", "l4"]
        (statements,) = seen
        lock = sql.lock_statement(sql.relation(SYNC_LOG))
        assert statements[: len(statements) - 2] == ([lock] if lock else [])
        assert [text.split()[0].upper() for text, _ in statements[-2:]] == ["DELETE", "INSERT"]
        monkeypatch.undo()
        self.load(sql, spark, REPLACED)
        assert self.log_ids(sql) == AFTER

    def test_insert_only_missing_adds_nothing_when_replayed(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Insert-only-missing: the client replays the swap's INSERT (its answer was lost); the
        replay adds no row."""
        sql = self.sql_target(target, insert_missing.statements)
        self.load(sql, spark, FIRST)
        run_swap = sql.run_swap

        def replayed(statements: list[Statement]) -> None:
            run_swap(statements)
            sql.execute(*statements[-1])

        seen = self.watch_swaps(sql, monkeypatch, replayed)
        self.load(sql, spark, REPLACED)
        self.load(sql, spark, [("y", 2, 10, 0, DAY_1)], sync_id=2)
        assert len(seen) == 2
        assert self.log_ids(sql) == ["l3", "x", "y"]

    def test_a_replayed_merge_changes_nothing(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """MERGE: one statement, which replayed changes nothing."""
        sql = self.sql_target(target, merge.statements)
        self.load(sql, spark, FIRST)
        seen = self.run_twice(sql, monkeypatch)
        self.load(sql, spark, REPLACED)
        self.load(sql, spark, [("y", 2, 10, 0, DAY_1)], sync_id=2)
        assert [len(statements) for statements in seen] == [1, 1]
        assert self.log_ids(sql) == ["l3", "x", "y"]

    def test_partition_replace_rewrites_the_partitions_touched_one_statement_each(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Partition replace: one statement per day touched; the other day's rows stay; a day left
        empty goes; the statements replayed change nothing."""
        sql = self.sql_target(target, partition_replace.statements)
        self.load(sql, spark, FIRST)
        seen = self.run_twice(sql, monkeypatch)
        self.load(sql, spark, REPLACED)  # day 1 only: rewritten without l1, l2 and with x
        assert self.log_ids(sql) == AFTER
        self.load(sql, spark, [("z", 1, 10, 1, DAY_1)])  # batch 1 moves to day 1: day 2 is left empty
        assert self.log_ids(sql) == ["l4", "x", "z"]
        assert [len(statements) for statements in seen] == [1, 2]
        relation = sql.relation(SYNC_LOG).render()
        later = self.rows_sql(sql, f"SELECT log_id FROM {relation} WHERE batch_number = 1")
        assert [r["log_id"] for r in later] == ["z"]
