"""The whole conformance suite on the SQLite target, plus what is SQLite's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synclog.testing.conformance import Outage, TargetConformance, file_outage


class TestSqlite(TargetConformance):
    """The suite, on the fresh database of `synclog_target_url` (conftest.py)."""

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, "sqlite", "logs.sqlite")
