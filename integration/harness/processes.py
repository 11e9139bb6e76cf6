"""What every stand-in harness needs: a free loopback port, starting a server on one, stopping it."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from synclog_testing.network import free_port as free_port  # the harness's servers use it too

from .errors import ServerStartError

S = TypeVar("S")


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


class PortTaken(Exception):
    """The server lost the race for the port it was given: start it again on another."""


def spawn(cmd: list[str], *, cwd: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start a server in a session of its own, its output appended to `log_path`."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_on_free_port(
    launch: Callable[[], tuple[subprocess.Popen[bytes], S]],
    wait: Callable[[subprocess.Popen[bytes], S], None],
    stop: Callable[[subprocess.Popen[bytes]], None],
    *,
    what: str,
    log_path: Path,
    attempts: int = 3,
) -> tuple[subprocess.Popen[bytes], S]:
    """`launch` a server on fresh ports until `wait` sees it answer (it raises `PortTaken` on a clash)."""
    for attempt in range(1, attempts + 1):
        proc, server = launch()
        try:
            wait(proc, server)
        except PortTaken:
            stop(proc)
            if attempt < attempts:
                continue
            lost = f"{what} lost the race for a free port {attempts} times"
            raise ServerStartError(f"{lost}; server log tail:\n{log_tail(log_path)}") from None
        except BaseException:
            stop(proc)
            raise
        return proc, server
    raise AssertionError("unreachable")


def lost_port_race(log: str) -> bool:
    """Whether a server's log says it exited because its port was taken."""
    return re.search(r"address already in use|failed to bind|Errno 98", log, re.IGNORECASE) is not None


def log_tail(path: Path, chars: int = 4000) -> str:
    """The last `chars` characters of a server log, or a word on why there are none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "(no server log)"
    if not text:
        return "(server log is empty)"
    return text if len(text) <= chars else "…" + text[-chars:]
