"""The whole conformance suite on the SQLite target, plus what is SQLite's own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from synclog.testing.conformance import Outage, TargetConformance


class TestSqlite(TargetConformance):
    """The suite, on the fresh database of `synclog_target_url` (conftest.py)."""

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        """A database whose folder cannot be made while a file stands where it goes."""
        blocker = tmp_path / "warehouse"
        blocker.write_text("")

        @contextmanager
        def up() -> Iterator[None]:
            blocker.unlink()
            yield

        yield Outage(f"sqlite:///{blocker / 'logs.sqlite'}", up)
