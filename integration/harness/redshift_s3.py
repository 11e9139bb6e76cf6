"""S3 as Redshift sees it in COPY and UNLOAD: which objects a COPY reads; S3 errors in Redshift's words.

The proxy plays the cluster reaching S3: with ``IAM_ROLE`` it uses its own keys (the role's), with
``ACCESS_KEY_ID``/``SECRET_ACCESS_KEY`` (or ``CREDENTIALS '…'``) the keys the statement gave.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .redshift_commands import Credentials

__all__ = ["S3CommandError", "S3Settings", "SourceFile", "copy_sources", "s3_client", "split_url"]


class S3CommandError(Exception):
    """A COPY/UNLOAD failed on the S3 side; the message is what the client sees."""


@dataclass(frozen=True)
class S3Settings:
    """Where the proxy's S3 is and the keys its IAM role stands for."""

    endpoint_url: str
    access_key: str
    secret_key: str = field(repr=False)
    region: str = "us-east-1"


@dataclass(frozen=True)
class SourceFile:
    url: str
    bucket: str
    key: str
    size: int


def split_url(url: str) -> tuple[str, str]:
    if not url.startswith("s3://"):
        raise S3CommandError(f"Invalid S3 URL {url!r}: it must start with s3://")
    bucket, _, key = url[5:].partition("/")
    if not bucket:
        raise S3CommandError(f"Invalid S3 URL {url!r}: no bucket")
    return bucket, key


def s3_client(settings: S3Settings, credentials: Credentials) -> Any:
    if credentials.iam_role is not None:
        keys = (settings.access_key, settings.secret_key, None)
    else:
        keys = (credentials.access_key_id, credentials.secret_access_key, credentials.session_token)
    return _client(settings.endpoint_url, settings.region, *keys)


@lru_cache(maxsize=16)
def _client(endpoint: str, region: str, key: str | None, secret: str | None, token: str | None) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        aws_session_token=token,
    )


def s3_error(exc: Exception, what: str = "") -> S3CommandError:
    """A botocore error worded like Redshift's ``S3ServiceException:…,Status …,Error …``."""
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {})
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
    code = error.get("Code", type(exc).__name__)
    message = error.get("Message") or _default_message(str(code)) or str(exc)
    prefix = f"{what} - " if what else ""
    return S3CommandError(f"{prefix}S3ServiceException:{message},Status {status},Error {code}")


def _default_message(code: str) -> str:
    return {
        "NoSuchKey": "The specified key does not exist.",
        "404": "The specified key does not exist.",
        "NoSuchBucket": "The specified bucket does not exist",
    }.get(code, "")


def get_object(client: Any, bucket: str, key: str, what: str = "") -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except (ClientError, BotoCoreError) as exc:
        raise s3_error(exc, what) from None


def copy_sources(client: Any, source: str, *, manifest: bool, columnar: bool = True) -> list[SourceFile]:
    """The objects a COPY reads: a manifest's entries, or every object under a key prefix.

    Entries of a manifest for columnar files (Parquet) need `meta.content_length`.
    """
    if manifest:
        return _manifest_entries(client, source, columnar)
    bucket, prefix = split_url(source)
    files = [
        SourceFile(f"s3://{bucket}/{key}", bucket, key, size)
        for key, size in list_objects(client, bucket, prefix)
    ]
    if not files:
        raise S3CommandError(f"The specified S3 prefix '{prefix}' does not exist")
    return files


def list_objects(client: Any, bucket: str, prefix: str) -> list[tuple[str, int]]:
    from botocore.exceptions import BotoCoreError, ClientError

    found: list[tuple[str, int]] = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.extend((item["Key"], int(item["Size"])) for item in page.get("Contents", []))
    except (ClientError, BotoCoreError) as exc:
        raise s3_error(exc) from None
    return sorted(found)


def _manifest_entries(client: Any, url: str, columnar: bool) -> list[SourceFile]:
    bucket, key = split_url(url)
    raw = get_object(client, bucket, key, "Problem reading manifest file")
    try:
        entries = json.loads(raw)["entries"]
        if not isinstance(entries, list):
            raise TypeError("entries is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise S3CommandError(f"Manifest file is not in correct json format: {exc}") from None
    files = []
    for entry in entries:
        file = _manifest_file(client, entry, columnar)
        if file is not None:
            files.append(file)
    if not files:
        raise S3CommandError(f"No files found to load from manifest {url}")
    return files


def _manifest_file(client: Any, entry: Any, columnar: bool) -> SourceFile | None:
    from botocore.exceptions import BotoCoreError, ClientError

    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        raise S3CommandError('Manifest file is not in correct json format: every entry needs a "url"')
    url = entry["url"]
    length = (entry.get("meta") or {}).get("content_length")
    if columnar and not isinstance(length, int):
        raise S3CommandError(
            f"Manifest entry for {url} has no meta.content_length: it is required to load Parquet files"
        )
    bucket, key = split_url(url)
    try:
        size = int(client.head_object(Bucket=bucket, Key=key)["ContentLength"])
    except (ClientError, BotoCoreError) as exc:
        if entry.get("mandatory") is True:
            raise s3_error(exc, f"Manifest file entry {url} is mandatory and could not be read") from None
        return None
    if length is not None and size != length:
        raise S3CommandError(
            f"Manifest entry for {url}: meta.content_length {length} is not the file's size {size}"
        )
    return SourceFile(url, bucket, key, size)
