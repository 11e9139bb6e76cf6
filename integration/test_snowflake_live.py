"""The Snowflake suite against a real account, when SNOWFLAKE_ACCOUNT, SNOWFLAKE_USER and
SNOWFLAKE_PASSWORD are set (SNOWFLAKE_WAREHOUSE and SNOWFLAKE_ROLE are used when set too).

The tests write into a database of their own, SYNCLOG_TEST_<random>, dropped after each test,
so an account's real CENSUS database is never touched: the seed queries run with that database's
name in place of CENSUS, everything else verbatim. The password is read by the plugin from
SNOWFLAKE_PASSWORD; it never appears in a URL here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote, urlencode

import pytest
from snowflake_suite import SnowflakeSuite

from synclog.plugins.manager import registry
from synclog.urls import TargetURL
from synclog_snowflake.target import SnowflakeTarget

REQUIRED = ("SNOWFLAKE_ACCOUNT", "SNOWFLAKE_USER", "SNOWFLAKE_PASSWORD")
MISSING = [name for name in REQUIRED if not os.environ.get(name)]

pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"no Snowflake account: set {', '.join(MISSING)} to run these tests"
)
DATABASE = f"SYNCLOG_TEST_{uuid.uuid4().hex[:12].upper()}"


def live_url(database: str) -> str:
    """A target URL for the account in the environment, without the password."""
    options = {
        key: os.environ[variable]
        for key, variable in (("warehouse", "SNOWFLAKE_WAREHOUSE"), ("role", "SNOWFLAKE_ROLE"))
        if os.environ.get(variable)
    }
    user, account = quote(os.environ["SNOWFLAKE_USER"], safe=""), os.environ["SNOWFLAKE_ACCOUNT"]
    return f"snowflake://{user}@{account}/{database}" + (f"?{urlencode(options)}" if options else "")


class TestSnowflakeLive(SnowflakeSuite):
    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": f"{DATABASE}.CENSUS.SYNC_LOG",
        "CENSUS.CENSUS.SOURCE_OBJECTS": f"{DATABASE}.CENSUS.SOURCE_OBJECTS",
    }
    expected_sync_log = f"{DATABASE}.CENSUS.SYNC_LOG"

    @pytest.fixture
    def synclog_target_url(self) -> Iterator[str]:
        url = live_url(DATABASE)
        yield url
        with registry().open(TargetURL.parse(url)) as target:
            assert isinstance(target, SnowflakeTarget)
            target.execute(f"DROP DATABASE IF EXISTS {target.quote(DATABASE)}")
