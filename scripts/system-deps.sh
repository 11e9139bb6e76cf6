#!/usr/bin/env bash
# Install the system packages the test suite and the benchmarks need, when they are missing.
# Java for Spark (a JDK: javac builds a small catalog plugin), PostgreSQL server binaries for the Postgres tests, the JDBC driver for bench/,
# Chromium and its WebDriver for the browser tests of `synclog serve` (tests/test_serve.py).
set -euo pipefail
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# javac builds the Spark catalog alias of integration/harness/spark_catalogs.py (Databricks stand-ins)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -e /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "synclog: please install: ${missing[*]} (tests that need them will be skipped)" >&2
  exit 0
fi
echo "installing ${missing[*]}" >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
