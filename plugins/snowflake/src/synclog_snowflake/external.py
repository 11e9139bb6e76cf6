"""Loads from `storage` in an object store: an external stage over it, COPY over the write's files.

The executors wrote the staged files to S3 or GCS; Snowflake reads them there itself, so no row
passes through the driver. The stage is temporary (it goes with the session) and points at the
root of `storage`; each COPY names exactly the files the tasks reported (`FILES = (…)`, at most
COPY_FILES per statement), never a listing. Snowflake reaches the bucket through a storage
integration (option `storage_integration`) or, on S3, with keys (options `aws_key_id`,
`aws_secret_key`, `aws_token`, else the keys `storage` itself uses). Keys are never printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from synclog import plugin_api as api

OPTIONS = ("storage_integration", "aws_key_id", "aws_secret_key", "aws_token")
"""The target's options (`options` in synclog.toml) that say how Snowflake reaches `storage`."""
EXTERNAL_STAGE = "SYNCLOG_EXTERNAL_STAGE"
"""A temporary stage per schema and session over the root of `storage`."""
COPY_FILES = 1000
"""Snowflake's limit on the file names one COPY's FILES clause may give."""
_SCHEMES = {"s3": "s3", "gs": "gcs"}
"""`storage` schemes and how a Snowflake stage URL spells them."""


@dataclass(frozen=True)
class StageAccess:
    """How Snowflake reaches the bucket: a storage integration, or S3 keys (kept out of `repr`)."""

    integration: str | None = None
    key_id: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(cls, options: Mapping[str, Any], storage: api.Location) -> StageAccess:
        """The `storage_integration` option, else the key options, else the keys of `storage` (S3)."""
        check_options(options)
        if options.get("storage_integration"):
            name = str(options["storage_integration"])
            return cls(integration=api.check_name(name, what="storage_integration", max_length=255))
        if storage.scheme != "s3":
            raise api.ConfigError(
                f"snowflake: loading from {storage} needs a storage integration "
                "(option storage_integration); keys are taken for s3:// storage only"
            )
        if options.get("aws_key_id") or options.get("aws_secret_key"):
            key_id, secret_key = options.get("aws_key_id"), options.get("aws_secret_key")
            return cls._keys(key_id, secret_key, options.get("aws_token"))
        if storage.access_key or storage.secret_key:
            return cls._keys(storage.access_key, storage.secret_key, storage.session_token)
        raise api.ConfigError(
            "snowflake: loading from s3:// storage needs a storage integration (option storage_integration) "
            "or keys (options aws_key_id and aws_secret_key, or the keys storage uses)"
        )

    @classmethod
    def _keys(cls, key_id: Any, secret_key: Any, token: Any) -> StageAccess:
        if not key_id or not secret_key:
            raise api.ConfigError("snowflake: S3 keys need both aws_key_id and aws_secret_key")
        return cls(
            key_id=_secret("aws_key_id", key_id),
            secret_key=_secret("aws_secret_key", secret_key),
            token=_secret("aws_token", token) if token else None,
        )

    def sql(self) -> str:
        """The stage's access clause (it may hold secrets: never log it)."""
        if self.integration is not None:
            return f"STORAGE_INTEGRATION = {self.integration}"
        token = f" AWS_TOKEN = '{self.token}'" if self.token else ""
        return f"CREDENTIALS = (AWS_KEY_ID = '{self.key_id}' AWS_SECRET_KEY = '{self.secret_key}'{token})"

    def hide(self, text: str) -> str:
        """`text` with every secret of this access replaced by `***`."""
        for secret in (self.key_id, self.secret_key, self.token):
            if secret:
                text = text.replace(secret, "***")
        return text


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse an option of the target's that is not one of OPTIONS, in one line."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise api.ConfigError(f"snowflake: unknown option {unknown[0]!r} (known: {', '.join(OPTIONS)})")


def stage_url(storage: api.Location) -> str:
    """The root of `storage` as a Snowflake stage URL (`s3://bucket/prefix/`, `gcs://…/`)."""
    return f"{_SCHEMES[storage.scheme]}://{storage.path()}/"


def create_stage_sql(stage: api.Relation, storage: api.Location, access: StageAccess) -> str:
    """A temporary external stage over the root of `storage`."""
    return (
        f"CREATE TEMPORARY STAGE IF NOT EXISTS {stage.render()} "
        f"URL = {literal(stage_url(storage))} {access.sql()}"
    )


def files_clause(files: Sequence[api.StoredFile]) -> str:
    """`FILES = ('path', …)`: the files by their paths inside `storage`, relative to the stage."""
    return "FILES = (" + ", ".join(literal(f.path) for f in files) + ")"


def literal(path: str) -> str:
    """A path as a Snowflake string literal; a quote or backslash in it is refused, not escaped."""
    return "'" + api.plain_text(path, what=f"staging path {path!r}") + "'"


def _secret(name: str, value: Any) -> str:
    return api.plain_text(value, what=f"snowflake: {name}")
