"""Stand-in servers shared by the integration tests: started once per test run, on demand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.errors import ServerUnavailable
from harness.postgres_server import PostgresServer, postgres_server
from harness.s3_server import S3Server, s3_server


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """A moto S3 server on loopback (tests skip with the reason where moto is missing)."""
    try:
        with s3_server() as server:
            yield server
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster (tests skip with the reason where its binaries are missing)."""
    try:
        with postgres_server() as pg:
            yield pg
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


STAND_INS = frozenset(
    (
        "bigquery",
        "databricks",
        "dbt",
        "duckdb",
        "faults",
        "lake",
        "postgres",
        "redshift",
        "s3",
        "snowflake",
        "spark",
    )
)
"""The marks `pytest -m` selects integration tests by: the stand-in (or real service) they need."""
_ALIASES = {"fakesnow": "snowflake"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each integration test with its stand-in, the first word of its file's name."""
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:
            continue
        word = item.path.stem.removeprefix("test_").split("_")[0]
        mark = _ALIASES.get(word, word)
        if mark in STAND_INS:
            item.add_marker(mark)
