"""The conformance suite on the SQLite target (every class but QUALIFY's), plus what is SQLite's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synclog_testing.conformance import (
    PortableConformance,
)
from synclog_testing.outage import Outage, file_outage


class TestSqlite(PortableConformance):  # SQLite has no QUALIFY
    """The suite, on the fresh database of `synclog_target_url` (conftest.py)."""

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, "sqlite", "logs.sqlite")
