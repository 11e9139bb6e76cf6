"""The public plugin API: everything a target plugin imports, from one module.

A plugin is built against one version of this API and says so in its entry-point module::

    from synclog import plugin_api as api

    SYNCLOG_PLUGIN_API = 1  # == api.PLUGIN_API_VERSION when the plugin was written

The core refuses a plugin that declares another version (or none) with one line naming it.
Names exported here keep their meaning within a plugin API version; anything else under
`synclog.*` is internal and may change in any release. See docs/plugins.md for the contract;
its section 10 lists every name exported here.
"""

from synclog.capabilities import Capabilities, Casefold, FileFormat, Schemas, Staging, SwapStrategy
from synclog.config import DEFAULT_RETENTION_DAYS
from synclog.errors import ConfigError, InputError, Outage, SynclogError, TargetError, first_line, outages
from synclog.naming import LineageDataset, Relation, check_name, lineage_namespace
from synclog.plugins.hookspecs import PLUGIN_API_VERSION, TargetRegister, hookimpl, registering
from synclog.spark import spark_session
from synclog.storage.files import by_name, published, write_frame
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile
from synclog.targets import sql_statements
from synclog.targets.base import Cutoffs, Target, TargetSettings, TargetType
from synclog.targets.contract import LAYOUT_METHODS
from synclog.targets.export import rows_batch, write_batches
from synclog.targets.keys import KeyGroup, Keys, RunBatches
from synclog.targets.literals import plain_text
from synclog.targets.rows import Rows
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_client import DbApiClient, SqlClient
from synclog.targets.sql_dialect import Params, SqlDialect
from synclog.targets.sql_loaders import (
    FileLoader,
    FrameLoader,
    PartitionDropper,
    PartitionExpirer,
    SchemaAttacher,
    TaskLoader,
)
from synclog.targets.sql_statements import Statement
from synclog.targets.stage_names import STAGE_NAME, STAGE_PREFIX
from synclog.targets.staging import FileStageWriter, Stages, StageWriter, TaskStage
from synclog.targets.swaps.choice import OwnSwap
from synclog.targets.swaps.partition_replace import (
    Partitioning,
    PartitionReplacer,
    PartitionValue,
    partitioning_of,
)
from synclog.targets.tables import Column, ColumnType, TableSpec
from synclog.urls import MEMORY, TargetURL

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "LAYOUT_METHODS",
    "MEMORY",
    "PLUGIN_API_VERSION",
    "STAGE_NAME",
    "STAGE_PREFIX",
    "Capabilities",
    "Casefold",
    "Column",
    "ColumnType",
    "ConfigError",
    "Cutoffs",
    "DbApiClient",
    "FileFormat",
    "FileLoader",
    "FileStageWriter",
    "FrameLoader",
    "InputError",
    "KeyGroup",
    "Keys",
    "LineageDataset",
    "Location",
    "Manifest",
    "Outage",
    "OwnSwap",
    "Params",
    "PartitionDropper",
    "PartitionExpirer",
    "PartitionReplacer",
    "PartitionValue",
    "Partitioning",
    "Relation",
    "Rows",
    "RunBatches",
    "SchemaAttacher",
    "Schemas",
    "SqlClient",
    "SqlDialect",
    "SqlTarget",
    "StageWriter",
    "Stages",
    "Staging",
    "Statement",
    "StoredFile",
    "SwapStrategy",
    "SynclogError",
    "TableSpec",
    "Target",
    "TargetError",
    "TargetRegister",
    "TargetSettings",
    "TargetType",
    "TargetURL",
    "TaskLoader",
    "TaskStage",
    "by_name",
    "check_name",
    "first_line",
    "hookimpl",
    "lineage_namespace",
    "outages",
    "partitioning_of",
    "plain_text",
    "published",
    "registering",
    "rows_batch",
    "spark_session",
    "sql_statements",
    "write_batches",
    "write_frame",
]
