"""The crash points of the test kit (`synclog_testing.crash`): how boundaries are numbered and
failed on a real DuckDB file and a real folder, and what a crash right after a DDL statement
taught the core (`ensure` records in `synclog_versions` what an earlier writer did not)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from synclog.errors import TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.sql import SqlTarget
from synclog.urls import TargetURL
from synclog_testing.crash import CRASH_MARK, CrashingLocation, CrashPlan, watch
from synclog_testing.crash_points import changed, versions_problems


def open_duckdb(tmp_path: Path) -> SqlTarget:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = registry().open(TargetURL.parse(f"duckdb:///{tmp_path / 'logs.duckdb'}"), settings)
    assert isinstance(target, SqlTarget)
    return target


def values(target: Target) -> list[int]:
    return [int(row[0]) for row in target.client.fetch("SELECT v FROM t ORDER BY v")]  # type: ignore[attr-defined]


def test_each_statement_has_a_boundary_before_and_after_and_a_transaction_its_begin_and_commit(
    tmp_path: Path,
) -> None:
    target = open_duckdb(tmp_path)
    plan = CrashPlan.create(tmp_path)
    try:
        target.client.execute("CREATE TABLE t (v INTEGER)")
        watch(target, plan)
        target.client.run_together([("INSERT INTO t VALUES (1)", ()), ("INSERT INTO t VALUES (2)", ())])
        assert [" ".join(s.split()[:3]) for s in plan.seen()] == [
            "before BEGIN",
            "after BEGIN",
            "before execute_bound INSERT",
            "after execute_bound INSERT",
            "before execute_bound INSERT",
            "after execute_bound INSERT",
            "before COMMIT",
            "after COMMIT",
        ]
        assert [changed(s) for s in plan.seen()] == [False, False, False, True, False, True, False, True]
    finally:
        target.close()


@pytest.mark.parametrize(
    ("at", "kept"),
    [(3, []), (5, []), (6, []), (7, [3, 4])],  # after the 1st INSERT, the 2nd, before and after COMMIT
)
def test_a_crash_inside_a_transaction_rolls_it_back_and_after_its_commit_only_the_answer_is_lost(
    tmp_path: Path, at: int, kept: list[int]
) -> None:
    target = open_duckdb(tmp_path)
    plan = CrashPlan.create(tmp_path)
    try:
        target.client.execute("CREATE TABLE t (v INTEGER)")
        watch(target, plan)
        plan.arm(at)
        with pytest.raises(TargetError, match=f"the connection was lost \\({CRASH_MARK} {at}\\)"):
            target.client.run_together([("INSERT INTO t VALUES (3)", ()), ("INSERT INTO t VALUES (4)", ())])
        with pytest.raises(TargetError, match="the connection is gone"):
            target.client.fetch("SELECT 1")
        assert plan.down
    finally:
        target.close()  # as a writer drops a connection that failed
    plan.heal()
    target = open_duckdb(tmp_path)
    try:
        assert values(target) == kept
    finally:
        target.close()


def test_a_table_whose_column_was_added_by_a_writer_that_stopped_before_its_version_row_is_recorded_once(
    tmp_path: Path,
) -> None:
    """A crash right after `ALTER TABLE … ADD COLUMN`, before the `synclog_versions` row: the next
    `ensure` records the column (it found nothing missing and recorded nothing before)."""
    older = replace(SYNC_LOG, columns=SYNC_LOG.columns[:-1])
    plan = CrashPlan.create(tmp_path)
    target = open_duckdb(tmp_path)
    try:
        target.ensure([older])
        watch(target, plan)
        plan.arm(None)
        target.ensure([SYNC_LOG])
        added = next(i for i, s in enumerate(plan.seen()) if s.startswith("after execute_bound ALTER TABLE"))
    finally:
        target.close()
    tmp_path.joinpath("logs.duckdb").unlink()
    target = open_duckdb(tmp_path)
    try:
        target.ensure([older])
        watch(target, plan)
        plan.arm(added)
        with pytest.raises(TargetError, match=CRASH_MARK):
            target.ensure([SYNC_LOG])
    finally:
        target.close()
    plan.heal()
    target = open_duckdb(tmp_path)
    try:
        columns = [c.lower() for c in target.existing_columns(target.relation(SYNC_LOG)) or ()]
        assert columns[-1] == "error_code"
        target.ensure([SYNC_LOG])
        assert versions_problems(target) == []
        versions = target.relation(SYNC_LOG).with_name("synclog_versions").render()
        rows = target.client.fetch(f"SELECT version, added_columns FROM {versions} ORDER BY version")
        assert rows[1:] == [(2, "error_code")]
    finally:
        target.close()


def test_the_lakes_files_are_written_moved_and_deleted_through_the_plan(tmp_path: Path) -> None:
    """A `CrashingLocation`'s filesystem: changes are calls with boundaries, failing with OSError
    (what the lake turns into an outage); reads fail only while the target is down."""
    plan = CrashPlan.create(tmp_path)
    location = CrashingLocation.of(Location.parse(str(tmp_path / "lake")), plan.path)
    fs = location.filesystem()
    with fs.open_output_stream(location.path("a/one.txt")) as stream:
        stream.write(b"1")
    fs.move(location.path("a/one.txt"), location.path("a/two.txt"))
    assert plan.seen() == [
        "before open_output_stream one.txt",
        "after open_output_stream one.txt",
        "before move two.txt",
        "after move two.txt",
    ]
    plan.arm(1)
    with pytest.raises(OSError, match=CRASH_MARK):
        fs.delete_file(location.path("a/two.txt"))
    with pytest.raises(OSError, match="does not answer"):
        fs.get_file_info(location.path("a/two.txt"))
    plan.heal()
    assert (tmp_path / "lake" / "a").exists() and not (tmp_path / "lake" / "a" / "two.txt").exists()
