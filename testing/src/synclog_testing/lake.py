"""The conformance suite for the lake in S3: its records counted as the census `sync_log` would be.

The lake lives in a fresh bucket of the S3 endpoint the standard `AWS_*` variables name (a moto
server in the tests); an outage is a bucket that does not exist until it comes up.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow.fs as pafs
import pytest

from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.targets.lake import LakeTarget
from synclog_testing.conformance import TargetConformance
from synclog_testing.outage import Outage
from synclog_testing.privacy import files_text

RECORDS_GLOB = "sync_tracking_datasets/*/*/*/*.parquet"
CENSUS_VIEW = r"""
SELECT identifier AS record_identifier, operation, status_message, error_code,
       destination_status AS status,
       CASE WHEN status IN ('NULL', 'DUPLICATE') THEN status END AS invalid_reason,
       CAST(regexp_extract(filename, '/(\d+)/(\d+)/\w+\.(\d+)\.parquet$', 1) AS BIGINT) AS sync_id,
       CAST(regexp_extract(filename, '/(\d+)/(\d+)/\w+\.(\d+)\.parquet$', 2) AS BIGINT) AS sync_run_id,
       CAST(regexp_extract(filename, '/(\d+)/(\d+)/\w+\.(\d+)\.parquet$', 3) AS INTEGER) AS batch_number
FROM read_parquet(?, filename = true, union_by_name = true)
"""
"""The lake's records with the census `sync_log` columns the suite counts by: run and batch come
from each file's path; the status is the destination's, the identifier checks' flag beside it."""


def create_bucket(name: str) -> None:
    """Create the bucket `name` on the endpoint of the `AWS_*` variables."""
    where = Location.parse(f"s3://{name}")
    pafs.S3FileSystem(
        access_key=where.access_key,
        secret_key=where.secret_key,
        region=where.region,
        endpoint_override=where.endpoint_url,
        allow_bucket_creation=True,
    ).create_dir(name)


class LakeConformance(TargetConformance):
    """`TargetConformance` for the lake in S3: the tests of the layouts it does not hold skip."""

    @pytest.fixture
    def synclog_target_url(self) -> Iterator[str]:
        bucket = f"lake-{uuid.uuid4().hex[:12]}"
        create_bucket(bucket)
        yield f"lake+s3://{bucket}/synclog"

    @pytest.fixture
    def outage(self) -> Iterator[Outage]:
        bucket = f"lake-{uuid.uuid4().hex[:12]}"

        @contextmanager
        def up() -> Iterator[None]:
            create_bucket(bucket)
            yield

        yield Outage(f"lake+s3://{bucket}/synclog", up)

    def count(self, target: Target, where: str = "1 = 1") -> int:
        assert isinstance(target, LakeTarget)
        if not self.logged_tables(target):
            return 0
        sql = f"SELECT COUNT(*) FROM ({CENSUS_VIEW}) WHERE {where}"
        return int(target.query(sql, [target.uri(RECORDS_GLOB)]).column(0)[0].as_py())

    def logged_text(self, target: Target) -> str:
        assert isinstance(target, LakeTarget)
        return files_text(target.location)[1]
