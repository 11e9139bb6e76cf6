"""Where files live: a local (or shared) folder, an S3 prefix, or a GCS prefix.

A `Location` is plain data that pickles: the driver and every Spark executor build their own
pyarrow filesystem from it, so files are written and read by whichever process has the rows,
without Hadoop connector jars. S3 settings come from the caller's options, else from the
standard environment variables (AWS_ENDPOINT_URL[_S3], AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION), read once on the driver so executors
elsewhere receive them too; without keys, pyarrow's default credential chain applies.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from synclog.errors import ConfigError

DEFAULT_REGION = "us-east-1"
VOLUMES = "/Volumes/"
"""Databricks Unity Catalog volumes: mounted at the same path on every node of a cluster."""


@dataclass(frozen=True)
class Location:
    """A folder on a local disk (absolute path), or `bucket/prefix` on S3 or GCS."""

    root: str
    scheme: str = "file"
    """file, s3 or gs."""
    shared: bool = False
    """A local folder that every Spark process reaches at the same path (NFS, a volume mount)."""
    endpoint_url: str | None = None
    region: str = DEFAULT_REGION
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, text: str, options: Mapping[str, Any] | None = None, *, what: str = "storage") -> Location:
        """`/path`, `relative/path`, `file:///path`, `s3://bucket/prefix` or `gs://bucket/prefix`."""
        options = options or {}
        parts = urlsplit(text)
        if parts.scheme in ("", "file"):
            path = parts.path if parts.scheme else text
            if not path:
                raise ConfigError(f"{what}: name a folder, e.g. .synclog or s3://bucket/prefix")
            shared = bool(options.get("shared", False)) or path.startswith(VOLUMES)
            return cls(root=os.path.abspath(path), shared=shared)
        if parts.scheme not in ("s3", "gs"):
            raise ConfigError(f"{what}: {parts.scheme}:// is not supported (use a path, s3:// or gs://)")
        if not parts.hostname:
            raise ConfigError(f"{what}: name a bucket, e.g. {parts.scheme}://my-bucket/synclog")
        return cls.object_store(parts.scheme, parts.hostname, parts.path, options)

    @classmethod
    def object_store(
        cls,
        scheme: str,
        bucket: str,
        prefix: str,
        options: Mapping[str, Any],
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
    ) -> Location:
        """`bucket/prefix` on S3 or GCS, with settings from `options`, else the environment."""

        def env(name: str) -> str | None:  # the AWS_* variables configure S3 only
            return os.environ.get(name) if scheme == "s3" else None

        return cls(
            root=posixpath.join(bucket, prefix.strip("/")).rstrip("/"),
            scheme=scheme,
            endpoint_url=options.get("endpoint_url") or env("AWS_ENDPOINT_URL_S3") or env("AWS_ENDPOINT_URL"),
            region=options.get("region") or env("AWS_REGION") or env("AWS_DEFAULT_REGION") or DEFAULT_REGION,
            access_key=access_key or options.get("access_key_id") or env("AWS_ACCESS_KEY_ID"),
            secret_key=secret_key or options.get("secret_access_key") or env("AWS_SECRET_ACCESS_KEY"),
            session_token=options.get("session_token") or env("AWS_SESSION_TOKEN"),
        )

    @property
    def local(self) -> bool:
        """Whether the files are on a mounted disk (as opposed to an object store)."""
        return self.scheme == "file"

    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem for this location (built afresh in each process)."""
        if self.scheme == "s3":
            return pafs.S3FileSystem(
                access_key=self.access_key,
                secret_key=self.secret_key,
                session_token=self.session_token,
                region=self.region,
                endpoint_override=self.endpoint_url,
            )
        if self.scheme == "gs":
            return _gcs(self.endpoint_url)
        return pafs.LocalFileSystem()

    def path(self, relative: str = "") -> str:
        """`relative` (a path inside the location) as the filesystem names it."""
        return posixpath.join(self.root, relative) if relative else self.root

    def relative(self, path: str) -> str:
        """The inverse of `path`."""
        return posixpath.relpath(path, self.root)

    def uri(self, relative: str = "") -> str:
        """`relative` as readers outside synclog name it: a local path, or an s3:// / gs:// URL."""
        return ("" if self.local else f"{self.scheme}://") + self.path(relative)

    def child(self, relative: str) -> Location:
        """The location of a folder inside this one."""
        return replace(self, root=self.path(relative))

    @property
    def reaches_every_node(self) -> bool:
        """Whether Spark executors on other machines see the same files (object store or shared)."""
        return not self.local or self.shared

    def __str__(self) -> str:
        return self.uri()


def _gcs(endpoint_url: str | None) -> pafs.GcsFileSystem:
    """GCS with the default credentials; an `http(s)://host:port` endpoint is a stand-in (an
    emulator), reached anonymously over the URL's scheme."""
    if endpoint_url is None or "://" not in endpoint_url:
        return pafs.GcsFileSystem(endpoint_override=endpoint_url)
    parts = urlsplit(endpoint_url)
    return pafs.GcsFileSystem(anonymous=True, scheme=parts.scheme, endpoint_override=parts.netloc)
