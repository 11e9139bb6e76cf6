"""Target URLs (`duckdb:///x.duckdb`, `postgresql://user@host:5432/db`, …), with secrets kept out of sight."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, unquote, urlsplit

from synclog.errors import ConfigError

MEMORY = ":memory:"
"""The path of an in-memory database (`scheme:///:memory:`), which no file backs."""


@dataclass(frozen=True)
class TargetURL:
    """A parsed target URL. `password` never appears in `str()` or `repr()`."""

    scheme: str
    host: str = ""
    port: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    path: str = ""
    query: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, *, password_env: str | None = None) -> TargetURL:
        """Parse `text`; the password may instead come from the variable `password_env`."""
        if "://" not in text:
            raise ConfigError(f"target {_redact(text)!r} is not a URL such as duckdb:///synclog.duckdb")
        parts = urlsplit(text)
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"target {_redact(text)!r} has an invalid port") from None
        password = unquote(parts.password) if parts.password else None
        if password is None and password_env:
            password = os.environ.get(password_env)
        return cls(
            scheme=parts.scheme.lower(),
            host=parts.hostname or "",
            port=port,
            user=unquote(parts.username) if parts.username else None,
            password=password,
            path=unquote(parts.path),
            query=dict(parse_qsl(parts.query)),
        )

    def file_path(self) -> str:
        """The database file a file URL names: `scheme:///relative/path` (relative to the working
        folder) or `scheme:////absolute/path`; `scheme:///:memory:` for an in-memory database.

        A host (`scheme://host/path`) or no path is a ConfigError showing both forms.
        """
        forms = f"{self.scheme}:///relative/path or {self.scheme}:////absolute/path"
        if self.host:
            raise ConfigError(f"{self}: a {self.scheme} URL names a file and has no host; use {forms}")
        path = self.path[1:] if self.path.startswith("/") else self.path
        if not path:
            raise ConfigError(f"{self}: name a database file: {forms}")
        return path

    def resolved(self) -> TargetURL:
        """This URL with a relative database file made absolute, against the working folder (the
        same tables, whoever names them from where); a URL with a host as it is."""
        if self.host or not self.path.strip("/") or MEMORY in self.path:
            return self
        return replace(self, path="/" + os.path.abspath(self.file_path()))

    def with_query(self, **values: str) -> TargetURL:
        """A copy with extra query parameters."""
        return replace(self, query={**self.query, **values})

    def __str__(self) -> str:
        auth = ""
        if self.user:
            auth = self.user + (":***" if self.password else "") + "@"
        netloc = auth + self.host + (f":{self.port}" if self.port else "")
        query = "&".join(f"{k}={v}" for k, v in self.query.items())
        return f"{self.scheme}://{netloc}{self.path}" + (f"?{query}" if query else "")


def _redact(text: str) -> str:
    parts = urlsplit(text) if "://" in text else None
    if parts and parts.password:
        return text.replace(f":{parts.password}@", ":***@")
    return text
