"""The Snowflake statements of a bulk load: PUT to a stage, COPY INTO with a transform."""

from __future__ import annotations

from collections.abc import Mapping

from synclog.plugin_api import Column, ColumnType, ConfigError, Relation, TableSpec


def put_sql(path: str, stage: Relation, prefix: str) -> str:
    """Upload one local file, as is (Parquet is compressed already), under `@stage/prefix/`."""
    if "'" in path:
        raise ConfigError(f"staged file {path!r} contains a quote; choose a `storage` folder without one")
    return f"PUT 'file://{path}' @{stage.render()}/{prefix}/ AUTO_COMPRESS = FALSE OVERWRITE = TRUE"


def copy_sql(
    into: Relation,
    table: TableSpec,
    stage: Relation,
    types: Mapping[ColumnType, str],
    *,
    prefix: str | None = None,
    files: str | None = None,
) -> str:
    """COPY Parquet files into `into`, typing each column on the way: every file under
    `@stage/prefix/` (an internal stage, emptied by PURGE once loaded), or the files that `files`
    (a `FILES = (…)` clause) names in `@stage` (an external stage over `storage`, whose files
    synclog removes itself).

    No FORCE: each load's stage is a fresh table, so its files are new to it, and a COPY that the
    connector sends again (its answer lost with a dropped connection) skips them through the
    table's load history instead of loading them twice.
    """
    columns = ", ".join(into.quoted(into.casefold.apply(c.name)) for c in table.columns)
    picked = ", ".join(_read(c, types) for c in table.columns)
    source = f"@{stage.render()}" + (f"/{prefix}/" if prefix else "")
    return (
        f"COPY INTO {into.render()} ({columns}) FROM (SELECT {picked} FROM {source}) "
        + (f"{files} " if files else "")
        + "FILE_FORMAT = (TYPE = PARQUET) ON_ERROR = ABORT_STATEMENT"
        + ("" if files else " PURGE = TRUE")
    )


def _read(column: Column, types: Mapping[ColumnType, str]) -> str:
    """The transform for one column: `$1:"name"` is the Parquet field, typed for the table."""
    field = '$1:"' + column.name.replace('"', '""') + '"'
    if column.type is ColumnType.JSON:
        return f"PARSE_JSON({field}::VARCHAR)"
    if column.type is ColumnType.TIMESTAMP:
        return f"TO_TIMESTAMP_TZ({field}::NUMBER, 6)"
    return f"{field}::{types[column.type]}"
