"""The conformance suite on the embedded DuckDB target."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from synclog.testing.conformance import Outage, TargetConformance


@pytest.fixture
def synclog_target_url(tmp_path: Path) -> Iterator[str]:
    yield f"duckdb:///{tmp_path / 'conformance.duckdb'}"


class TestDuckDB(TargetConformance):
    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        """A database whose folder cannot be made while a file stands where it goes."""
        blocker = tmp_path / "warehouse"
        blocker.write_text("")

        @contextmanager
        def up() -> Iterator[None]:
            blocker.unlink()
            yield

        yield Outage(f"duckdb:///{blocker / 'logs.duckdb'}", up)
