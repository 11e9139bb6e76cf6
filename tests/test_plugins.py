"""Plugins: built-ins and third-party targets load the same way, through entry points."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pluggy
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.errors import ConfigError
from synclog.plugins import manager
from synclog.plugins.hookspecs import hookimpl
from synclog.storage.location import Location
from synclog.targets.duckdb import TARGET_TYPE
from synclog.testing.factories import make_records, make_run, record_rows
from synclog.urls import TargetURL
from synclog.writer import SyncLog

TOY = Path(__file__).parent / "toy_plugin" / "synclog_toy.py"


@pytest.fixture
def installed_toy(tmp_path: Path) -> Iterator[None]:
    """Install the toy plugin the way pip would: a module plus a dist-info with entry points."""
    site = tmp_path / "site"
    dist = site / "synclog_toy-0.1.dist-info"
    dist.mkdir(parents=True)
    shutil.copy(TOY, site / "synclog_toy.py")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: synclog-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[synclog]\ntoy = synclog_toy\n")
    sys.path.insert(0, str(site))
    manager.registry.cache_clear()
    yield
    sys.path.remove(str(site))
    sys.modules.pop("synclog_toy", None)
    manager.registry.cache_clear()


def test_builtin_duckdb_is_registered_through_its_entry_point() -> None:
    pm = manager.plugin_manager()
    assert "duckdb" in {name for name, _ in pm.list_name_plugin()}
    assert manager.registry().for_url(TargetURL.parse("duckdb:///x.duckdb")) is TARGET_TYPE


def test_third_party_target_writes(installed_toy: None, tmp_path: Path, spark: SparkSession) -> None:
    names = [t.name for t in manager.registry().types()]
    assert {"duckdb", "lake", "toy"} <= set(names)
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(f"toy://{tmp_path / 'lake'}", config, spark) as log:
        run = make_run()
        log.write_run(run, make_records(spark, record_rows(run)))
        log.write_run(run, make_records(spark, record_rows(run)))
    table = pq.read_table(tmp_path / "lake" / "census.sync_log_records.parquet")
    assert table.num_rows == 40
    assert pq.read_table(tmp_path / "lake" / "census.source_objects.parquet").num_rows == 1


def test_unknown_scheme_names_the_plugin_to_install() -> None:
    with pytest.raises(ConfigError, match=r"no installed plugin handles oracle://.*synclog-oracle"):
        manager.registry().for_url(TargetURL.parse("oracle://u@host/db"))


def test_two_plugins_claiming_a_scheme_is_an_error() -> None:
    registry = manager.registry()
    with pytest.raises(ConfigError, match="both claim duckdb://"):
        registry.register(TARGET_TYPE.__class__(**{**TARGET_TYPE.__dict__, "name": "other-duckdb"}))


def test_a_misspelt_hook_fails_loudly() -> None:
    class Misspelt:
        @hookimpl
        def synclog_register_target(self, register: object) -> None:  # missing "s"
            """Never called: the hook name is wrong."""

    pm = pluggy.PluginManager("synclog")
    from synclog.plugins import hookspecs

    pm.add_hookspecs(hookspecs)
    pm.register(Misspelt())
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'synclog_register_target'"):
        pm.check_pending()
