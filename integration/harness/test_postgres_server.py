"""The throwaway PostgreSQL harness starts a real server and cleans up after itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from .errors import ServerUnavailable
from .postgres_server import postgres_server

psycopg = pytest.importorskip("psycopg")


def test_round_trip_and_cleanup() -> None:
    try:
        with postgres_server() as pg:
            base_dir = pg.base_dir
            assert base_dir.is_dir()
            with psycopg.connect(pg.dsn) as conn:
                assert conn.execute("select 1").fetchone() == (1,)
                row = conn.execute("select current_setting('server_version_num')::int").fetchone()
                assert row is not None
                assert row[0] >= 120000
                assert conn.execute("select current_user, current_database()").fetchone() == (
                    pg.user,
                    pg.database,
                )
            with psycopg.connect(pg.url) as conn:
                assert conn.execute("select 1").fetchone() == (1,)
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert not base_dir.exists()


def test_cleanup_when_body_raises() -> None:
    base_dir: Path | None = None
    try:
        with pytest.raises(RuntimeError, match="boom"), postgres_server() as pg:
            base_dir = pg.base_dir
            raise RuntimeError("boom")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert base_dir is not None
    assert not base_dir.exists()
