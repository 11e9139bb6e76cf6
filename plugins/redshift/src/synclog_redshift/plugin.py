"""Registers the Redshift target; redshift_connector is imported only when a target is opened."""

from __future__ import annotations

from synclog.plugin_api import (
    Capabilities,
    Target,
    TargetRegister,
    TargetSettings,
    TargetType,
    TargetURL,
    hookimpl,
)
from synclog_redshift.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def _open(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    from synclog_redshift.target import RedshiftTarget

    return RedshiftTarget(url, settings, capabilities)


TARGET_TYPE = TargetType(
    name="redshift",
    schemes=("redshift",),
    capabilities=CAPABILITIES,
    summary="Amazon Redshift: COPY of staged JSON lines from S3 into SUPER, UNLOAD read-backs",
    opener=_open,
    example_url="redshift://synclog@cluster.example.us-east-1.redshift.amazonaws.com:5439/analytics",
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the Redshift target."""
    register(TARGET_TYPE)
