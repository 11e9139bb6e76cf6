"""Exceptions shared by the integration-test harness modules."""

from __future__ import annotations


class ServerUnavailable(Exception):
    """A stand-in server cannot be provided on this machine (tests should skip).

    Raised when something the harness needs is missing (binaries, a user to run
    them as, ...), as opposed to a server that is present but fails to start.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class ServerStartError(RuntimeError):
    """A stand-in server is installed but did not start (tests should fail)."""
