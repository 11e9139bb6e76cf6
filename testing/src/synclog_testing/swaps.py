"""The swap's tests (`synclog.targets.swaps`), run on every SQL target whatever its strategy, its
own (`swap = own`) included, and judged by what the table holds: replaces by keys and by scope, a
batch moved to another day, a swap or a statement replayed; and the statements a swap sends,
captured on their way through the target's client: they match the table by the replaced keys'
constants, never by the staged rows'.

Each test loads census `sync_log` rows straight through `replace_rows`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.layouts.census import SYNC_LOG
from synclog.targets.base import Target
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_statements import Statement
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
KEYED = [("k1", 417, 4170, 3, DAY_1), ("k2", 417, 4170, 3, DAY_2)]
"""Rows of keys no other row has (sync 417, run 4170, batch 3), to find among a swap's parameters."""
STAGE_MATCHES = re.compile(r"\bEXISTS\s*\(|\bIN\s*\(\s*SELECT\b|\bUSING\s*\(\s*SELECT\s+DISTINCT\b", re.I)
"""How a statement matches a table's rows against a stage's: a semi-join, not constants."""


def log_rows(rows: Sequence[tuple[str, int, int, int, datetime]]) -> list[dict[str, Any]]:
    names = ("log_id", "sync_id", "sync_run_id", "batch_number", "batch_started_at")
    return [dict(zip(names, row, strict=True)) for row in rows]


class SwapConformance(ConformanceBase):
    """The swap of every SQL target, whatever its strategy."""

    def sql_target(self, target: Target) -> SqlTarget:
        """`target` as a SQL target, its census `sync_log` created; a target that runs no swap
        statements (the lake) skips."""
        self.require(target, "census")
        if not isinstance(target, SqlTarget):
            pytest.skip(f"{target.url.scheme} runs no swap statements")
        target.ensure([SYNC_LOG])
        return target

    def load(self, target: SqlTarget, spark: SparkSession, rows: Sequence[Any], **scope: Any) -> int:
        """Load census rows in place of `scope`'s, else of their own keys."""
        loaded = Rows.local(spark, SYNC_LOG, log_rows(rows))
        keys = Keys.scope(scope) if scope else Keys.of_rows(SYNC_LOG, loaded)
        return target.replace_rows(SYNC_LOG, loaded, keys)

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

    def test_a_swap_replaces_by_key_and_by_scope(self, target: Target, spark: SparkSession) -> None:
        """A batch again replaces its rows only; a scope replaces every row matching it, also by
        no rows."""
        sql = self.sql_target(target)
        assert self.load(sql, spark, FIRST) == 4
        assert self.load(sql, spark, REPLACED) == 1
        assert self.log_ids(sql) == AFTER, "the batch written again left rows it replaces"
        assert self.load(sql, spark, [], sync_id=1) == 0
        assert self.log_ids(sql) == ["l4"]
        assert self.load(sql, spark, [("y", 2, 21, 0, DAY_2)], sync_id=2) == 1
        assert self.log_ids(sql) == ["y"]

    def test_a_batch_moved_to_another_day_leaves_no_row_on_the_first(
        self, target: Target, spark: SparkSession
    ) -> None:
        """A batch written again with its rows on another day: the day it left keeps none of them
        (a day left empty is emptied) and the rows of other batches stay where they were."""
        sql = self.sql_target(target)
        self.load(sql, spark, FIRST)
        self.load(sql, spark, REPLACED)
        self.load(sql, spark, [("z", 1, 10, 1, DAY_1)])  # batch 1 moves to day 1: day 2 is left empty
        assert self.log_ids(sql) == ["l4", "x", "z"]
        relation = sql.relation(SYNC_LOG).render()
        later = self.rows_sql(sql, f"SELECT log_id FROM {relation} WHERE batch_number = 1")
        assert [r["log_id"] for r in later] == ["z"]

    def test_a_swap_run_twice_changes_nothing(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every swap's statements run twice over (a batch written again, to the statement): the
        table holds what one run of them leaves."""
        sql = self.sql_target(target)
        run_swap = sql.run_swap

        def twice(statements: list[Statement]) -> None:
            run_swap(statements)
            run_swap(statements)

        seen = self.watch_swaps(sql, monkeypatch, twice)
        self.load(sql, spark, FIRST)
        self.load(sql, spark, REPLACED)
        assert self.log_ids(sql) == AFTER
        self.load(sql, spark, [("y", 2, 10, 0, DAY_1)], sync_id=2)
        assert len(seen) == 3
        assert self.log_ids(sql) == ["l3", "x", "y"]

    def test_a_statement_the_client_replays_changes_nothing(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A client that replays statements (`replays_statements`) may send any one of a swap's
        statements twice in a row: the table holds what the swap leaves."""
        sql = self.sql_target(target)
        if not sql.capabilities.replays_statements:
            pytest.skip(f"{target.url.scheme}'s client sends no statement twice (replays_statements = no)")
        run_swap = sql.run_swap
        sent: list[Statement] = []

        def replayed(statements: list[Statement]) -> None:
            doubled = [statement for statement in statements for _ in range(2)]
            sent.extend(doubled)
            run_swap(doubled)

        self.watch_swaps(sql, monkeypatch, replayed)
        self.load(sql, spark, FIRST)
        self.load(sql, spark, REPLACED)
        self.load(sql, spark, [("y", 2, 10, 0, DAY_1)], sync_id=2)
        assert sent
        assert self.log_ids(sql) == ["l3", "x", "y"]

    def test_a_swap_matches_the_table_by_the_keys_constants(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The statements a swap sends through the target's client carry the replaced keys as
        constants (parameters), and none matches the table's rows against the stage's (an
        EXISTS, an IN or USING of a stage query, a staged column compared with the table's):
        a write reads its own run's data, and the warehouse prunes the table by the constants."""
        sql = self.sql_target(target)
        relation = sql.relation(SYNC_LOG).render()
        with captured(sql, monkeypatch) as sent:
            self.load(sql, spark, KEYED)
        assert self.log_ids(sql) == ["k1", "k2"]
        stage = _stage_name(sent, relation)
        naming_table = [(text, params) for text, params in sent if relation in text]
        assert any({417, 4170, 3} <= _values(params) for _, params in naming_table), naming_table
        q = sql.dialect.quote
        for text, _ in naming_table:
            if stage not in text:
                continue
            assert not STAGE_MATCHES.search(text), text
            for key in SYNC_LOG.replace_key:
                column = re.escape(q(key))
                joined = rf"\b\w+\.{column}\s*=\s*\w+\.{column}"
                assert not re.search(joined, text), text


@contextmanager
def captured(target: SqlTarget, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Statement]]:
    """Every statement (and its parameters) the target sends through its client in the block."""
    sent: list[Statement] = []
    client = target.client
    for name in ("execute", "fetch", "query"):
        original = getattr(client, name)

        def watched(sql: str, params: Sequence[Any] = (), *, _original: Any = original) -> Any:
            sent.append((sql, list(params)))
            return _original(sql, params)

        monkeypatch.setattr(client, name, watched)
    yield sent


def _stage_name(sent: Sequence[Statement], relation: str) -> str:
    """The name of the stage the statements `sent` created (a new name: `_synclog_stage_…`)."""
    for text, _ in sent:
        found = re.search(r"_synclog_stage_[0-9a-z_]+", text, re.I)
        if found:
            return found.group(0)
    raise AssertionError(f"no statement sent for a load into {relation} names its stage")


def _values(params: Any) -> set[int]:
    """The integers a statement binds, positional or named."""
    values = params.values() if isinstance(params, dict) else params
    return {v for v in values if type(v) is int}
