"""The throwaway S3 harness serves real S3 requests on loopback and cleans up after itself."""

from __future__ import annotations

import pytest

from .errors import ServerUnavailable
from .s3_server import s3_server

pafs = pytest.importorskip("pyarrow.fs")


def test_round_trip_and_cleanup() -> None:
    try:
        with s3_server() as s3:
            base_dir = s3.log_file.parent
            assert s3.endpoint_url.startswith("http://127.0.0.1:")
            s3.create_bucket("harness")
            fs = pafs.S3FileSystem(**s3.pyarrow_kwargs())
            with fs.open_output_stream("harness/a/b.txt") as out:
                out.write(b"hello")
            with fs.open_input_stream("harness/a/b.txt") as stream:
                assert stream.read() == b"hello"
            listed = fs.get_file_info(pafs.FileSelector("harness", recursive=True))
            assert sorted(i.path for i in listed) == ["harness/a", "harness/a/b.txt"]
            with pytest.raises(OSError):
                fs.get_file_info(pafs.FileSelector("no-such-bucket"))
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert not base_dir.exists()


def test_cleanup_when_body_raises() -> None:
    try:
        with pytest.raises(RuntimeError, match="boom"), s3_server() as s3:
            base_dir = s3.log_file.parent
            raise RuntimeError("boom")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert not base_dir.exists()
