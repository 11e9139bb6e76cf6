"""The conformance suite as a pytest plugin, loaded by pytest wherever `synclog-testing` is installed.

A plugin's tests give the suite one fixture, a fresh and empty target per test, and subclass it:

    # conftest.py
    import pytest

    @pytest.fixture
    def synclog_target_url(tmp_path):
        yield f"mywarehouse:///{tmp_path / 'suite.db'}"

    # test_conformance.py
    from synclog_testing.conformance import TargetConformance

    class TestMyWarehouse(TargetConformance):
        pass  # options: seed_names, expected_sync_log, settings, partition_columns

`TargetConformance` runs every class of the suite (`NamingAndDdlConformance`,
`QualifyConformance`, …) against `synclog_target_url`; a warehouse subclasses only the classes
it takes part in (no QUALIFY: no `QualifyConformance`). Tests of a layout the target does not
hold skip. A class may give the fixture as a method instead, where a
module holds suites of several targets.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

FIXTURE = "synclog_target_url"


@pytest.fixture
def synclog_target_url() -> Iterator[str]:
    """A fresh, empty target per test: the plugin's tests override this fixture."""
    pytest.fail(
        f"the synclog conformance suite needs a `{FIXTURE}` fixture (in conftest.py or the test "
        "module) that yields a fresh target URL per test",
        pytrace=False,
    )
    yield ""  # pragma: no cover
