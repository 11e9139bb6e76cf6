"""The whole conformance suite on the SQLite target, plus what is SQLite's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synclog_testing.conformance import TargetConformance
from synclog_testing.outage import Outage, file_outage


class TestSqlite(TargetConformance):
    """The suite, on the fresh database of `synclog_target_url` (conftest.py)."""

    qualify = False  # SQLite has no QUALIFY

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, "sqlite", "logs.sqlite")
