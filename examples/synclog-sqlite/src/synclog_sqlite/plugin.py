"""Registers the SQLite target: the module the `synclog` entry point names."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_sqlite.target import CAPABILITIES, SqliteTarget

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

TARGET_TYPE = api.TargetType(
    name="sqlite",
    schemes=("sqlite",),
    capabilities=CAPABILITIES,
    summary="SQLite file (Python's sqlite3); each schema a file attached under its name",
    opener=SqliteTarget,  # sqlite3 is in the standard library: nothing to import lazily
    example_url="sqlite:///synclog.sqlite",
    file_url=True,  # sqlite:///relative.sqlite, sqlite:////absolute.sqlite, parsed by the core
)

synclog_register_targets = api.registering(TARGET_TYPE)
"""The `synclog_register_targets` hook: registers the SQLite target."""
