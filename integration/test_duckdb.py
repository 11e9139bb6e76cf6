"""The conformance suite on the embedded DuckDB target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synclog.testing.conformance import TargetConformance


class TestDuckDB(TargetConformance):
    @pytest.fixture
    def target_url(self, tmp_path: Path) -> Iterator[str]:
        yield f"duckdb:///{tmp_path / 'conformance.duckdb'}"
