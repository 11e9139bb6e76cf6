"""Where a SQL warehouse's COPY INTO reads a load's staged files from.

Straight from `storage` where the warehouse reaches it: an `s3://` or `gs://` prefix, or a
Unity Catalog volume (`/Volumes/<catalog>/<schema>/<volume>/…`, which a Databricks cluster's
executors write as a local folder). No row then passes through the driver. Object storage is
read through a Unity Catalog external location over it (nothing to configure here), or, on S3,
with temporary keys the target's options give (`aws_access_key`, `aws_secret_key`,
`aws_session_token`), sent in the statement and never printed. A local folder only this
machine sees is uploaded into a volume with `PUT` instead (`WarehouseTarget`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from synclog import plugin_api as api

OPTIONS = ("aws_access_key", "aws_secret_key", "aws_session_token")
"""The target's options with temporary S3 keys for COPY INTO (else an external location applies)."""
VOLUMES = "/Volumes/"


@dataclass(frozen=True)
class CopyAccess:
    """Temporary S3 keys for COPY INTO, or none (an external location grants the read)."""

    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], storage: api.Location) -> CopyAccess:
        """The key options, given both or neither, and only for `s3://` storage."""
        key, secret, token = (options.get(name) for name in OPTIONS)
        if not (key or secret or token):
            return cls()
        if storage.scheme != "s3":
            raise api.ConfigError(f"databricks: S3 keys are given, but storage is {storage}")
        if not key or not secret:
            raise api.ConfigError("databricks: S3 keys need both aws_access_key and aws_secret_key")
        return cls(
            _text("aws_access_key", key),
            _text("aws_secret_key", secret),
            _text("aws_session_token", token) if token else None,
        )

    def clause(self) -> str:
        """` WITH (CREDENTIAL (…))` after the source path, or nothing (it may hold secrets: never log it)."""
        if self.access_key is None:
            return ""
        keys = [("AWS_ACCESS_KEY", self.access_key), ("AWS_SECRET_KEY", self.secret_key)]
        if self.session_token:
            keys.append(("AWS_SESSION_TOKEN", self.session_token))
        return " WITH (CREDENTIAL (" + ", ".join(f"{name} = '{value}'" for name, value in keys) + "))"


def reads_storage(storage: api.Location) -> bool:
    """Whether the warehouse reads `storage` itself: an object store or a Unity Catalog volume."""
    return not storage.local or storage.root.startswith(VOLUMES)


def copy_sql(stage: api.Relation, folder: str, files: list[str], access: CopyAccess) -> str:
    """COPY INTO `stage` the Parquet `files` (names inside `folder`, a path or URL) and no other."""
    names = ", ".join(literal(name) for name in files)
    return (
        f"COPY INTO {stage.render()} FROM {literal(folder)}{access.clause()} "
        f"FILEFORMAT = PARQUET FILES = ({names})"
    )


def literal(path: str) -> str:
    """A path as a SQL string literal (a quote or backslash in it is refused, not escaped)."""
    return "'" + api.plain_text(path, what=f"staging path {path!r}") + "'"


def _text(name: str, value: Any) -> str:
    return api.plain_text(value, what=f"databricks: {name}")
