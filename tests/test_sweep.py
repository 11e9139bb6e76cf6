"""What a killed writer leaves under storage is removed by the next writer, and only that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from synclog.errors import TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.naming import Relation
from synclog.storage import owners
from synclog.storage.location import Location
from synclog.storage.sweep import sweep, sweep_scratch
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBTarget
from synclog.targets.stage_names import new_stage_name, orphaned, released, stage_owner
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog_testing.factories import make_run


def dead_owner() -> str:
    """The tag of a process that has ended."""
    code = "from synclog.storage.owners import owner; print(owner())"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def touch(path: Path, age: timedelta | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    if age is not None:
        when = (datetime.now(UTC) - age).timestamp()
        os.utime(path, (when, when))


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_owner_tags_name_this_process_and_tell_the_dead() -> None:
    mine, dead = owners.owner(), dead_owner()
    assert owners.tag_of(owners.tagged("w-1")) == mine
    assert owners.tag_of(f".run.json.abc@{dead}.tmp") == dead
    assert owners.tag_of("run.json") is None and owners.tag_of("x@not-a-tag") is None
    assert not owners.gone(mine)
    assert owners.gone(dead)
    foreign = "elsewhere_1_1"
    assert not owners.gone(foreign), "another host's process: no age known, kept"
    assert not owners.gone(foreign, datetime.now(UTC))
    assert owners.gone(foreign, datetime.now(UTC) - timedelta(days=2))


def test_stage_names_tell_a_dead_writers_stage() -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    mine, dead = new_stage_name(), f"_synclog_stage_0123abcd_{owners.host_digest()}_{ended.pid}_1"
    assert stage_owner(mine) == owners.compact_owner() and len(mine + "_parts") <= 63
    assert stage_owner(dead.upper()) == stage_owner(dead), "Snowflake folds names to upper case"
    assert not orphaned(mine) and orphaned(dead) and orphaned(dead.upper())
    for other in ("sync_log", "_synclog_stage_0123456789abcdef", f"{dead}_copy", f"x{dead}"):
        assert stage_owner(other) is None and not orphaned(other)
    foreign = "_synclog_stage_0123abcd_00000000_1_1"  # another host's: kept until a day old
    assert not orphaned(foreign) and not orphaned(foreign, datetime.now(UTC))
    assert orphaned(foreign, datetime.now(UTC) - timedelta(days=2))


def test_this_process_s_stage_is_left_over_once_released() -> None:
    """A load whose stage's drop failed has released it: its stage is then a leftover, while the
    stage of another load of this process, still open, is not."""
    done, running = new_stage_name(), new_stage_name()
    released(done.upper())  # as the warehouse names it (Snowflake folds names to upper case)
    assert orphaned(done) and orphaned(done.upper())
    assert not orphaned(running)


def test_a_stage_whose_creation_failed_is_left_over(tmp_path: Path) -> None:
    """The connection is lost as the stage is created (its answer lost: it may exist): no load
    will release it, so it is the next sweep's at once."""
    target = DuckDBTarget(TargetURL.parse(f"duckdb:///{tmp_path / 'lost.duckdb'}"), TargetSettings(), DUCKDB)
    created: list[str] = []

    def lost(stage: Relation, table: TableSpec) -> None:
        created.append(stage.name)
        raise TargetError("duckdb: the connection was lost")

    target.create_stage = lost  # type: ignore[method-assign]
    with pytest.raises(TargetError):
        target.open_stage(SYNC_LOG)
    assert len(created) == 1 and orphaned(created[0])
    target.close()


def test_sweep_removes_the_leftovers_of_gone_writers_only(tmp_path: Path) -> None:
    dead, mine = dead_owner(), owners.owner()
    run = tmp_path / "runs" / "1234" / "5678"
    kept_batch = f"1234/5678/w-a@{dead}/0-p00000.parquet"
    (run).mkdir(parents=True)
    (run / "run.json").write_text(
        json.dumps(
            {
                "run": make_run().to_dict(),
                "batches": {"0": [{"path": kept_batch, "rows": 1}]},
                "pending": [],
                "finished": False,
            }
        )
    )
    for path in [
        f"staging/{dead}/_synclog_stage_0123456789abcdef/part-p00000.parquet",
        f"staging/{mine}/_synclog_stage_fedcba9876543210/part-p00000.parquet",
        f"exports/{dead}/abc/part-00000.parquet",
        f"runs/{kept_batch}",
        f"runs/1234/5678/w-a@{dead}/1-p00000.parquet",  # replaced, not yet deleted when killed
        f"runs/1234/5678/w-b@{dead}/0-p00000.parquet",  # a write killed before its commit
        f"runs/1234/5678/w-c@{mine}/0-p00000.parquet",  # a write in progress
        f"runs/1234/5678/.run.json.abc@{dead}.tmp",
        f"runs/1234/9999/w-d@{dead}/0-p00000.parquet",  # a run never committed
    ]:
        touch(tmp_path / path)
    touch(tmp_path / "exports/elsewhere_1_1/old/part-00000.parquet", timedelta(days=2))
    touch(tmp_path / "exports/elsewhere_2_2/new/part-00000.parquet")

    removed = sweep(Location.parse(str(tmp_path)))
    assert files(tmp_path) == {
        f"staging/{mine}/_synclog_stage_fedcba9876543210/part-p00000.parquet",
        "exports/elsewhere_2_2/new/part-00000.parquet",
        "runs/1234/5678/run.json",
        f"runs/{kept_batch}",
        f"runs/1234/5678/w-c@{mine}/0-p00000.parquet",
    }
    assert len(removed) == 7
    assert not (tmp_path / "runs/1234/9999").exists()
    assert sweep(Location.parse(str(tmp_path))) == []


def test_scratch_files_of_gone_writers_are_removed_beside_a_published_file(tmp_path: Path) -> None:
    dead, mine = dead_owner(), owners.owner()
    for name in [
        f".records.0.parquet.abc@{dead}.tmp",
        f".records.0.parquet.def@{mine}.tmp",
        "records.0.parquet",
    ]:
        touch(tmp_path / name)
    removed = sweep_scratch(pafs.LocalFileSystem(), str(tmp_path))
    assert [Path(p).name for p in removed] == [f".records.0.parquet.abc@{dead}.tmp"]
    assert files(tmp_path) == {f".records.0.parquet.def@{mine}.tmp", "records.0.parquet"}
