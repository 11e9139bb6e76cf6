"""The conformance suite on the embedded DuckDB target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synclog.testing.conformance import Outage, TargetConformance, file_outage


@pytest.fixture
def synclog_target_url(tmp_path: Path) -> Iterator[str]:
    yield f"duckdb:///{tmp_path / 'conformance.duckdb'}"


class TestDuckDB(TargetConformance):
    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, "duckdb", "logs.duckdb")
