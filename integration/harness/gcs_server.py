"""A throwaway GCS endpoint (gcp-storage-emulator) on loopback, its objects on a disk folder.

Usage::

    with gcs_server(root, bucket="logs") as gcs:
        storage = Location.parse("gs://logs/prefix", {"endpoint_url": gcs.endpoint_url})

Objects are kept as files at `root/BUCKET/NAME` (the emulator's `<data dir>/.cloudstorage`
is a link to `root`): give it local-bigquery's `gcs_root`, and its load jobs read the
`gs://BUCKET/NAME` that Spark's executors wrote through the GCS API. The emulator takes any
request without credentials. A missing emulator (`pip install gcp-storage-emulator`) raises
:class:`ServerUnavailable`; one that does not start raises :class:`ServerStartError`.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ServerStartError, ServerUnavailable
from .processes import free_port, stop_process

HOST = "127.0.0.1"
_START_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class GcsServer:
    """A running emulator; valid only inside :func:`gcs_server`."""

    endpoint_url: str
    root: Path
    log_file: Path


@contextmanager
def gcs_server(root: Path, *, bucket: str) -> Iterator[GcsServer]:
    """Run the emulator with `bucket`, its objects under `root`, for the `with` block."""
    if importlib.util.find_spec("gcp_storage_emulator") is None:
        raise ServerUnavailable("gcp-storage-emulator is not installed (pip install gcp-storage-emulator)")
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-gcs-"))
    (base_dir / ".cloudstorage").symlink_to(root, target_is_directory=True)
    port = free_port()
    server = GcsServer(f"http://{HOST}:{port}", root, base_dir / "server.log")
    command = [sys.executable, "-m", "gcp_storage_emulator", "-d", str(base_dir), "start"]
    command += ["--host", HOST, "--port", str(port), "--default-bucket", bucket]
    with server.log_file.open("wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not _accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = server.log_file.read_text(errors="replace")[-2000:]
                raise ServerStartError(f"gcp-storage-emulator did not start on port {port}:\n{tail}")
            time.sleep(0.1)
        yield server
    finally:
        try:
            stop_process(proc, _STOP_TIMEOUT_S)
        finally:
            shutil.rmtree(base_dir, ignore_errors=True)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False
