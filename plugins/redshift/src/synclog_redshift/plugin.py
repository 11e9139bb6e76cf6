"""Registers the Redshift target; redshift_connector is imported only when a target is opened."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_redshift.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

TARGET_TYPE = api.TargetType(
    name="redshift",
    schemes=("redshift",),
    capabilities=CAPABILITIES,
    summary="Amazon Redshift: COPY of staged JSON lines from S3 into SUPER, UNLOAD read-backs",
    opener="synclog_redshift.target:RedshiftTarget",
    example_url="redshift://synclog@cluster.example.us-east-1.redshift.amazonaws.com:5439/analytics",
)

synclog_register_targets = api.registering(TARGET_TYPE)
