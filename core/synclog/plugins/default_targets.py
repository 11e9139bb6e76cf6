"""The built-in targets, DuckDB and the lake, registered through the same hook as every plugin.

The plugin manager registers this module before the installed plugins' entry points, so the
target modules themselves know nothing of the plugin system.
"""

from __future__ import annotations

from functools import partial

from synclog.layouts.lake import LAKE_FILES
from synclog.plugins.hookspecs import TargetRegister, hookimpl
from synclog.targets import duckdb, lake
from synclog.targets.base import TargetType

LAKE = TargetType(
    name="lake",
    schemes=("lake", "lake+s3"),
    capabilities=lake.CAPABILITIES,
    summary="Parquet files in a folder or an S3 bucket (Census' Sync Tracking layout)",
    opener=partial(lake.LakeTarget, files=LAKE_FILES),
    example_url="lake:///synclog-lake",
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register DuckDB and the lake."""
    register(duckdb.TARGET_TYPE)
    register(LAKE)
