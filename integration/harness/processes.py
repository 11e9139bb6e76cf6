"""What every stand-in harness needs: a free loopback port, and a way to stop a server process."""

from __future__ import annotations

import signal
import socket
import subprocess


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (another process may still take it: retry on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes], timeout: float, stop_signal: int = signal.SIGTERM) -> None:
    """Ask `proc` to stop with `stop_signal`, kill it if it has not stopped within `timeout`."""
    if proc.poll() is not None:
        return
    proc.send_signal(stop_signal)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
