"""Start and stop a throwaway S3 endpoint (moto in server mode) on loopback for integration tests.

Usage::

    with s3_server() as s3:
        s3.create_bucket("lake")
        fs = pyarrow.fs.S3FileSystem(endpoint_override=s3.endpoint_url, **s3.pyarrow_kwargs())

The server is ``python -m moto.server`` in a subprocess on 127.0.0.1 and a free port, so any
process (Spark's Python workers, a CLI subprocess) reaches it over HTTP. It keeps everything in
memory and accepts any credentials; it is stopped (SIGTERM, then SIGKILL) and its log folder
removed on exit, also when the body raises.

A missing moto server (``pip install 'moto[server]'``) raises :class:`ServerUnavailable` so
tests can skip with the reason; a server that is installed but does not start raises
:class:`ServerStartError` with its log tail.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ServerStartError, ServerUnavailable
from .processes import free_port, stop_process

__all__ = ["HOST", "S3Server", "ServerStartError", "ServerUnavailable", "s3_server"]

HOST = "127.0.0.1"
ACCESS_KEY = "synclog-test"
SECRET_KEY = "synclog-test-secret"
REGION = "us-east-1"
_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 15.0
_LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class S3Server:
    """A running moto S3 endpoint; valid only inside :func:`s3_server`."""

    endpoint_url: str
    log_file: Path
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    region: str = REGION

    @property
    def environment(self) -> dict[str, str]:
        """The AWS_* variables that point clients (pyarrow, boto3, synclog) at this endpoint."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
        }

    def pyarrow_kwargs(self) -> dict[str, str]:
        """Keyword arguments for ``pyarrow.fs.S3FileSystem``."""
        return {
            "endpoint_override": self.endpoint_url,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": self.region,
        }

    def storage_options(self) -> dict[str, str]:
        """synclog's storage options for this endpoint (``Location.parse``'s second argument)."""
        return {
            "endpoint_url": self.endpoint_url,
            "region": self.region,
            "access_key_id": self.access_key,
            "secret_access_key": self.secret_key,
        }

    def create_bucket(self, name: str) -> None:
        """Create the bucket ``name`` (boto3, as a user would)."""
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )
        client.create_bucket(Bucket=name)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of the server's output."""
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(no server log at {self.log_file}: {exc})"
        return "\n".join(text.splitlines()[-lines:]) or "(server log is empty)"


def require_moto_server() -> None:
    """Raise :class:`ServerUnavailable` unless moto's server mode and boto3 can be imported."""
    for module in ("moto.server", "flask", "boto3"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ServerUnavailable(f"{module} is not installed (pip install 'moto[server]' boto3)")


@contextmanager
def s3_server(*, startup_timeout: float = _START_TIMEOUT_S) -> Iterator[S3Server]:
    """Run a fresh, empty moto S3 server for the duration of the ``with`` block."""
    require_moto_server()
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-s3-"))
    port = free_port()
    server = S3Server(endpoint_url=f"http://{HOST}:{port}", log_file=base_dir / "server.log")
    with server.log_file.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_ready(proc, server, startup_timeout)
        yield server
    finally:
        try:
            stop_process(proc, _STOP_TIMEOUT_S)
        finally:
            shutil.rmtree(base_dir, ignore_errors=True)


def _wait_until_ready(proc: subprocess.Popen[bytes], server: S3Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerStartError(
                f"moto server exited with {proc.returncode} before serving; log tail:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"{server.endpoint_url}/moto-api/", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers HTTP: it is up
        except OSError:
            time.sleep(0.1)
    raise ServerStartError(
        f"moto server did not answer on {server.endpoint_url} within {timeout:.0f}s; "
        f"log tail:\n{server.log_tail()}"
    )
