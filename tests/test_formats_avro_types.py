"""Every column type of the PostgreSQL and MariaDB type catalogues round-trips through Avro.

The records of each type-catalogue run (``tests/data/*_types.yaml``, real servers, snapshot and
streaming; the same runs as ``test_postgres_types_e2e.py`` / ``test_mariadb_types_e2e.py``) are
written by cdc's Avro converter to a schema registry (the test one, and a real one when
``CDC_TEST_SCHEMA_REGISTRY_URL`` is set), read back as a consumer does (the registry's schema by
the id in the frame, then fastavro) and mapped back to JsonConverter's form: each key and value
must equal the JSON payload (after JsonConverter's default filling; float32 at float32 precision;
bytes and decimals base64, as the documented mapping says). Decimal columns are also checked
through Avro's ``decimal`` logical type: the decoded ``Decimal`` has the column's value.
The quick variant runs the first mode set of each catalogue; ``CDC_SOAK=1`` runs them all.
"""

from __future__ import annotations

import base64
import decimal
import os
from typing import Any

import pytest

import test_mariadb_types_e2e as mariadb_types
import test_postgres_types_e2e as postgres_types
from avro_reader import as_json, decode, float32_payload
from brokers.schema_registry import TestSchemaRegistry, external_registry_url
from cdc_core.serializers.defaults import fill
from cdc_core.serializers.formats import build_serializer, settings_from_server

# The catalogues' module-scoped connector runs (fixtures), reused here.
from test_mariadb_types_e2e import run_for as mariadb_run_for  # noqa: F401
from test_postgres_types_e2e import run_for  # noqa: F401

SOAK = bool(os.environ.get("CDC_SOAK"))
PG_MODE_SETS = list(postgres_types.DATA["mode_sets"])
MARIADB_MODE_SETS = list(mariadb_types.DATA["mode_sets"])


@pytest.fixture(scope="module", params=["test-registry"] + (["real-registry"] if external_registry_url() else []))
def registry_url(request) -> Any:
    """The test registry's URL, or the real one's (``CDC_TEST_SCHEMA_REGISTRY_URL``)."""
    if request.param == "real-registry":
        yield external_registry_url()
        return
    registry = TestSchemaRegistry().start()
    yield registry.url
    registry.stop()


def _records(run: Any) -> list:
    out = []
    for by_op in run.records.values():
        for rows in by_op.values():
            out += list(rows.values())
    return out


def _unscaled(text: str) -> int:
    return int.from_bytes(base64.b64decode(text), "big", signed=True)


def _check(records: list, url: str) -> int:
    """Write ``records`` as Avro keys and values, read them back, compare; return how many values were checked."""
    serializer = build_serializer(settings_from_server({
        "debezium.format.key": "avro", "debezium.format.value": "avro",
        "debezium.format.schema.registry.url": url}))
    written = serializer.serialize(records)
    problems: list[str] = []
    decimals = 0
    for record, out in zip(records, written):
        for side, schema, payload, data in (("key", record.key_schema, record.key, out.key),
                                            ("value", record.value_schema, record.value, out.value)):
            if payload is None:
                assert data is None
                continue
            _, logical, raw = decode(url, data, frozenset({"decimal"}))
            expected = float32_payload(fill(schema, payload), schema)
            got = as_json(raw, schema)
            if got != expected:
                problems.append(f"{record.topic} {side}: avro read back {got!r:.400} != json {expected!r:.400}")
            if side == "value" and payload.get("after"):
                after_schema = schema.field("after").schema
                for f in after_schema.fields:
                    x = payload["after"].get(f.name)
                    if f.schema.name == "org.apache.kafka.connect.data.Decimal" and x is not None:
                        scale = int((f.schema.parameters or {}).get("scale", "0"))
                        value = logical["after"][f.name]
                        assert isinstance(value, decimal.Decimal)
                        assert value == decimal.Decimal(_unscaled(x)).scaleb(-scale, decimal.Context(prec=200)), f.name
                        decimals += 1
    serializer.close()
    assert not problems, "\n".join(problems[:20])
    return len(written)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode_set", PG_MODE_SETS if SOAK else PG_MODE_SETS[:1])
def test_postgres_types_round_trip_through_avro(run_for, registry_url, mode_set: str) -> None:  # noqa: F811
    """Every PostgreSQL catalogue column: cdc -> Avro bytes -> registry schema + fastavro equals the JSON payload."""
    run = run_for(mode_set)
    records = _records(run)
    assert records
    assert _check(records, registry_url) == len(records)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode_set", MARIADB_MODE_SETS if SOAK else MARIADB_MODE_SETS[:1])
def test_mariadb_types_round_trip_through_avro(mariadb_run_for, registry_url, mode_set: str) -> None:  # noqa: F811
    """Every MariaDB catalogue column: cdc -> Avro bytes -> registry schema + fastavro equals the JSON payload."""
    run = mariadb_run_for(mode_set)
    records = _records(run)
    assert records
    assert _check(records, registry_url) == len(records)
