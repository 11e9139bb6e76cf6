"""A target's connection, opened when first needed and opened again after a failure."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from functools import partial

from synclog.capabilities import Capabilities
from synclog.errors import TargetError
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.urls import TargetURL


class Connector:
    """Holds one target: what it is (URL, its type's capabilities) is known before it answers.

    `target` connects on first use; `reset()` after a failure drops the connection so the next
    use connects afresh. An unreachable warehouse therefore costs a retry, never the writer.
    """

    def __init__(
        self,
        url: TargetURL,
        capabilities: Capabilities,
        opener: Callable[[], Target] | None,
        target: Target | None = None,
    ) -> None:
        self.url = url
        self.capabilities = capabilities
        self._opener = opener
        self._target = target

    @classmethod
    def of(cls, target: Target) -> Connector:
        """A target the caller opened; it is used as it is and never reopened."""
        return cls(target.url, target.capabilities, None, target)

    @classmethod
    def for_type(cls, kind: TargetType, url: TargetURL, settings: TargetSettings) -> Connector:
        """The target `kind` opens at `url`, not connected yet."""
        return cls(url, kind.capabilities_for(url, settings), partial(kind.open, url, settings))

    @property
    def target(self) -> Target:
        """The connected target; connects first if needed (raising what the opener raises)."""
        if self._target is None:
            if self._opener is None:
                raise TargetError(f"{self.url}: the connection was closed")
            self._target = self._opener()
        return self._target

    @property
    def connected(self) -> bool:
        """Whether the target is open now."""
        return self._target is not None

    def reset(self) -> None:
        """After a failure: close the connection quietly, so the next use connects again."""
        if self._opener is not None and self._target is not None:
            with suppress(Exception):
                self._target.close()
            self._target = None

    def close(self) -> None:
        """Close the connection if one is open; the connector is not used again after this."""
        target, self._target, self._opener = self._target, None, None
        if target is not None:
            target.close()
