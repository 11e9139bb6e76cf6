"""Registers the Redshift target; redshift_connector is imported only when a target is opened."""

from __future__ import annotations

from typing import Any

from synclog.plugins.hookspecs import hookimpl
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.urls import TargetURL
from synclog_redshift.capabilities import CAPABILITIES


def _open(url: TargetURL, settings: TargetSettings) -> Target:
    from synclog_redshift.target import RedshiftTarget

    return RedshiftTarget(url, settings)


TARGET_TYPE = TargetType(
    name="redshift",
    schemes=("redshift",),
    capabilities=CAPABILITIES,
    summary="Amazon Redshift: COPY of staged JSON lines from S3 into SUPER, UNLOAD read-backs",
    opener=_open,
    example_url="redshift://synclog@cluster.example.us-east-1.redshift.amazonaws.com:5439/analytics",
)


@hookimpl
def synclog_register_targets(register: Any) -> None:
    """Register the Redshift target."""
    register(TARGET_TYPE)
