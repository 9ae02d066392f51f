"""Debezium semantic schemas and the value encoders shared by connectors."""

from __future__ import annotations

import base64
import math
import random
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal

import orjson
import pytest

from cdc_core import semantic as sem

# ----------------------------------------------------------------- schemas


@pytest.mark.parametrize(
    ("name", "type_"),
    [
        (sem.DATE, "int32"),
        (sem.TIME, "int32"),
        (sem.MICRO_TIME, "int64"),
        (sem.NANO_TIME, "int64"),
        (sem.TIMESTAMP, "int64"),
        (sem.MICRO_TIMESTAMP, "int64"),
        (sem.NANO_TIMESTAMP, "int64"),
        (sem.ZONED_TIMESTAMP, "string"),
        (sem.ZONED_TIME, "string"),
        (sem.MICRO_DURATION, "int64"),
        (sem.INTERVAL, "string"),
        (sem.YEAR, "int32"),
        (sem.CONNECT_DATE, "int32"),
        (sem.CONNECT_TIME, "int32"),
        (sem.CONNECT_TIMESTAMP, "int64"),
        (sem.JSON, "string"),
        (sem.UUID, "string"),
        (sem.XML, "string"),
        (sem.LTREE, "string"),
    ],
)
def test_semantic_schema_renders_like_jsonconverter(name: str, type_: str) -> None:
    assert sem.semantic_schema(name).to_json() == {"type": type_, "optional": False, "name": name, "version": 1}
    assert sem.semantic_schema(name, optional=True).to_json()["optional"] is True


def test_semantic_schemas_are_shared() -> None:
    assert sem.semantic_schema(sem.DATE) is sem.semantic_schema(sem.DATE)
    assert sem.decimal_schema(2, 10) is sem.decimal_schema(2, 10)
    assert sem.semantic_schema(sem.DATE) is not sem.semantic_schema(sem.DATE, optional=True)


def test_unknown_semantic_name() -> None:
    with pytest.raises(KeyError, match="io.example.Nope"):
        sem.semantic_schema("io.example.Nope")


def test_decimal_schema_parameter_order() -> None:
    rendered = orjson.dumps(sem.decimal_schema(2, 10, optional=True).to_json())
    assert rendered == (
        b'{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        b'"parameters":{"scale":"2","connect.decimal.precision":"10"}}'
    )
    assert sem.decimal_schema(3).to_json()["parameters"] == {"scale": "3"}


def test_variable_scale_decimal_schema() -> None:
    assert sem.variable_scale_decimal_schema(optional=True).to_json() == {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ],
        "optional": True,
        "name": "io.debezium.data.VariableScaleDecimal",
        "version": 1,
        "doc": "Variable scaled decimal",
    }
    assert sem.semantic_schema(sem.VARIABLE_SCALE_DECIMAL) is sem.variable_scale_decimal_schema()


def test_bits_enum_schemas() -> None:
    assert sem.bits_schema(10).to_json() == {
        "type": "bytes", "optional": False, "name": "io.debezium.data.Bits", "version": 1, "parameters": {"length": "10"},
    }  # fmt: skip
    assert sem.enum_schema(["a", "b"], optional=True).to_json() == {
        "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1, "parameters": {"allowed": "a,b"},
    }  # fmt: skip
    assert sem.enum_set_schema(["x"]).to_json()["name"] == "io.debezium.data.EnumSet"


# ----------------------------------------------------------------- binary


@pytest.mark.parametrize(
    ("mode", "schema_type", "expected"),
    [
        ("bytes", "bytes", "+/8A"),
        ("base64", "string", "+/8A"),
        ("base64-url-safe", "string", "-_8A"),
        ("hex", "string", "fbff00"),
    ],
)
def test_binary_modes(mode: str, schema_type: str, expected: str) -> None:
    data = bytes([0xFB, 0xFF, 0x00])
    assert sem.encode_bytes(data, mode) == expected
    assert sem.bytes_encoder(mode)(data) == expected
    assert sem.binary_schema(mode).type == schema_type


def test_binary_padding_and_empty() -> None:
    assert sem.encode_bytes(b"\x01", "base64-url-safe") == "AQ=="  # Java's URL encoder keeps padding
    assert sem.encode_bytes(b"", "bytes") == ""
    assert sem.encode_bytes(b"", "hex") == ""


def test_unknown_binary_mode() -> None:
    with pytest.raises(ValueError, match="binary.handling.mode 'base32'"):
        sem.encode_bytes(b"", "base32")


# ----------------------------------------------------------------- decimals


@pytest.mark.parametrize(
    ("unscaled", "expected"),
    [
        (0, "AA=="),
        (-1, "/w=="),
        (1, "AQ=="),
        (127, "fw=="),
        (128, "AIA="),
        (-128, "gA=="),
        (-129, "/38="),
        (255, "AP8="),
        (1234, "BNI="),
        (-150, "/2o="),
    ],
)
def test_unscaled_two_complement(unscaled: int, expected: str) -> None:
    assert sem.unscaled_to_base64(unscaled) == expected


def test_unscaled_matches_biginteger_to_byte_array_randomly() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        n = rng.randint(-(2**200), 2**200) >> rng.randint(0, 200)
        raw = base64.b64decode(sem.unscaled_to_base64(n))
        assert int.from_bytes(raw, "big", signed=True) == n
        # minimal: dropping the first byte must change the value (or leave nothing)
        assert len(raw) == 1 or int.from_bytes(raw[1:], "big", signed=True) != n


@pytest.mark.parametrize(
    ("value", "scale", "expected"),
    [
        ("12.34", 2, "BNI="),
        ("12.3", 2, "BM4="),
        ("0", 2, "AA=="),
        ("-0.01", 2, "/w=="),
        ("1E+2", 0, "ZA=="),
        ("12300", -2, "ew=="),
    ],
)
def test_encode_decimal(value: str, scale: int, expected: str) -> None:
    assert sem.encode_decimal(Decimal(value), scale) == expected


def test_encode_decimal_refuses_rounding_and_specials() -> None:
    with pytest.raises(ValueError, match="scale 1"):
        sem.encode_decimal(Decimal("1.25"), 1)
    with pytest.raises(ValueError, match="special"):
        sem.encode_decimal(Decimal("NaN"), 2)


def test_decimal_encoder_writes_what_encode_decimal_writes_and_refuses_the_same() -> None:
    for scale in (0, 2, 5):
        encode = sem.decimal_encoder(scale)
        for value in ("12.34", "-0.01", "0", "-0.00", "1E+2", "99999.99999", "-128", "127", "255",
                      "-123456789012345678901234567890123456.78", "1E-30", "9" * 60 + ".5"):
            try:
                expected = sem.encode_decimal(Decimal(value), scale)
            except ValueError as e:
                with pytest.raises(ValueError, match=str(e)):
                    encode(Decimal(value))
            else:
                assert encode(Decimal(value)) == encode(value) == expected
    with pytest.raises(ValueError, match="special value -Infinity"):
        sem.decimal_encoder(2)(Decimal("-Infinity"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12.345", {"scale": 3, "value": "MDk="}),
        ("1.50", {"scale": 1, "value": "Dw=="}),
        ("100", {"scale": 0, "value": "ZA=="}),
        ("0.000", {"scale": 0, "value": "AA=="}),
        ("-5.5", {"scale": 1, "value": "yQ=="}),
        # 31 digits (Db2 DECFLOAT(34), DatatypesFromSnapshotIT): not rounded to Python's 28-digit default context.
        ("3.012345678901234567890123456789", {"scale": 30, "value": "JgVp8aMaHZNwLjmBFQ=="}),
    ],
)
def test_variable_scale_decimal(value: str, expected: dict) -> None:
    assert sem.variable_scale_decimal(Decimal(value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12.34", "12.34"),
        ("-0.50", "-0.50"),
        ("100", "100"),
        ("0.000000", "0.000000"),
        ("0.0000000", "0E-7"),
        ("0.0000001000", "1.000E-7"),
        ("-0.0000001", "-1E-7"),
        ("0.000001", "0.000001"),
        ("1E+3", "1E+3"),
    ],
)
def test_java_decimal_string(value: str, expected: str) -> None:
    assert sem.java_decimal_string(Decimal(value)) == expected


# ----------------------------------------------------------------- floats


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.5, 1.5), (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")],
)
def test_json_float(value: float, expected: object) -> None:
    assert sem.json_float(value) == expected


@pytest.mark.parametrize(
    ("value", "expected_json"),
    [
        (3.14, b"3.14"),
        (0.1, b"0.1"),
        (3.140000104904175, b"3.14"),  # the float32 nearest 3.14, as a double
        (1e10, b"10000000000.0"),
        (-2.5, b"-2.5"),
        (0.0, b"0.0"),
    ],
)
def test_json_float32_is_shortest_round_trip(value: float, expected_json: bytes) -> None:
    assert orjson.dumps(sem.json_float32(value)) == expected_json


def test_json_float32_round_trips_randomly() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        f = sem.to_float32(rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30))
        out = sem.json_float32(f)
        assert sem.to_float32(out) == f
        assert len(repr(out)) <= len(repr(f))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1234.56, "1234.56"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1.5e-5, "1.5E-5"),
        (-0.5, "-0.5"),
        (0.0, "0.0"),
    ],
)
def test_java_double_string(value: float, expected: str) -> None:
    assert sem.java_double_string(value) == expected


# ----------------------------------------------------------------- calendar


def test_days_from_civil_matches_datetime() -> None:
    for d in (date(1, 1, 1), date(1582, 10, 4), date(1969, 12, 31), date(1970, 1, 1), date(2000, 2, 29), date(9999, 12, 31)):
        assert sem.days_from_civil(d.year, d.month, d.day) == (d - date(1970, 1, 1)).days
        assert sem.civil_from_days(sem.days_from_civil(d.year, d.month, d.day)) == (d.year, d.month, d.day)


def test_proleptic_years_outside_python_range() -> None:
    assert sem.days_from_civil(0, 1, 1) == -719528  # 1 BC, a leap year
    assert sem.days_from_civil(10000, 1, 1) == 2932897
    for days in (-800000, -719529, 2932897, 10**8, -(10**8)):
        assert sem.days_from_civil(*sem.civil_from_days(days)) == days


def test_epoch_day_and_times() -> None:
    assert sem.epoch_day(date(1970, 1, 2)) == 1
    assert sem.epoch_day(date(1969, 12, 31)) == -1
    t = time(15, 13, 16, 945104)
    assert sem.millis_of_day(t) == 54796945
    assert sem.micros_of_day(t) == 54796945104
    assert sem.nanos_of_day(t) == 54796945104000


def test_epoch_timestamps_before_1970_floor() -> None:
    dt = datetime(1969, 12, 31, 23, 59, 59, 999500)
    assert sem.epoch_micros(dt) == -500
    assert sem.epoch_millis(dt) == -1
    assert sem.epoch_nanos(dt) == -500000
    assert sem.epoch_micros(datetime(2018, 6, 20, 15, 13, 16, 945104)) == 1529507596945104
    aware = datetime(2018, 6, 20, 17, 13, 16, 945104, tzinfo=timezone(timedelta(hours=2)))
    assert sem.epoch_micros(aware) == 1529507596945104


def test_epoch_encoder_counts_as_epoch_millis_micros_nanos_from_a_datetime_or_its_text() -> None:
    values = [datetime(1969, 12, 31, 23, 59, 59, 999500), datetime(2018, 6, 20, 15, 13, 16, 945104),
              datetime(2018, 6, 20, 17, 13, 16, 945104, tzinfo=timezone(timedelta(hours=2))), datetime(1, 1, 1)]
    for per_second, exact in ((1000, sem.epoch_millis), (1_000_000, sem.epoch_micros), (1_000_000_000, sem.epoch_nanos)):
        encode = sem.epoch_encoder(per_second)
        assert [encode(v) for v in values] == [encode(v.isoformat()) for v in values] == [exact(v) for v in values]


# ----------------------------------------------------------------- zoned formats


@pytest.mark.parametrize(
    ("epoch_us", "expected"),
    [
        (1529507596945104, "2018-06-20T15:13:16.945104Z"),
        (1529507596900000, "2018-06-20T15:13:16.9Z"),
        (1529507580000000, "2018-06-20T15:13:00Z"),
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (-62135596800000000, "0001-01-01T00:00:00Z"),
        (-62167219200000000, "0000-01-01T00:00:00Z"),
        (253402300800000000, "+10000-01-01T00:00:00Z"),
    ],
)
def test_format_zoned_timestamp(epoch_us: int, expected: str) -> None:
    assert sem.format_zoned_timestamp_micros(epoch_us) == expected


def test_format_zoned_timestamp_nanos_and_bc_years() -> None:
    assert sem.format_zoned_timestamp(0, 1) == "1970-01-01T00:00:00.000000001Z"
    assert sem.iso_year(-43) == "-0043"
    assert sem.iso_year(44) == "0044"
    days = sem.days_from_civil(-43, 3, 15)
    assert sem.format_zoned_timestamp(days * 86400 + 43200) == "-0043-03-15T12:00:00Z"


def test_zoned_timestamp_from_datetime() -> None:
    aware = datetime(2018, 6, 20, 0, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert sem.zoned_timestamp(aware) == "2018-06-19T19:00:00Z"
    assert sem.zoned_timestamp(datetime(2018, 6, 20, 15, 13, 16, 945100)) == "2018-06-20T15:13:16.9451Z"


def test_zoned_time() -> None:
    assert sem.format_zoned_time(sem.micros_of_day(time(13, 13, 16, 945104)) * 1000) == "13:13:16.945104Z"
    assert sem.zoned_time(time(1, 0, tzinfo=timezone(timedelta(hours=5)))) == "20:00:00Z"
    assert sem.zoned_time(time(23, 0, tzinfo=timezone(-timedelta(hours=3)))) == "02:00:00Z"
    assert sem.zoned_time(time(12, 0, 0, 500000)) == "12:00:00.5Z"


# ----------------------------------------------------------------- durations


def test_micro_duration() -> None:
    assert sem.micro_duration(1, 2, 3, 4, 5, 6.78) == 37091106780000
    assert sem.micro_duration(0, 1, 0, 0, 0, 0.0) == 2629800000000
    assert sem.micro_duration(0, 0, -1, 2, 3, 0.0) == -79020000000
    assert sem.micro_duration(0, 0, 0, 0, 0, -0.5) == -500000
    # (long) of a double beyond the long range saturates, as in Java.
    assert sem.micro_duration(178000000, 0, 0, 0, 0, 0.0) == 2**63 - 1
    assert sem.micro_duration(-178000000, 0, 0, 0, 0, 0.0) == -(2**63)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((1, 2, 3, 4, 5, 6.78), "P1Y2M3DT4H5M6.78S"),
        ((0, 0, 0, 0, 0, 0.0), "P0Y0M0DT0H0M0S"),
        ((0, 0, 0, 0, 0, -0.0), "P0Y0M0DT0H0M0S"),
        ((-1, -2, 3, -4, -5, -6.0), "P-1Y-2M3DT-4H-5M-6S"),
        ((0, 0, 0, 0, 0, 100.0), "P0Y0M0DT0H0M100S"),
        ((0, 0, 0, 0, 0, 0.3), "P0Y0M0DT0H0M0.3S"),  # BigDecimal.valueOf(0.3), as Debezium 2.7
        ((1, 2, 3, 4, 5, 6.789), "P1Y2M3DT4H5M6.789S"),  # not 6.788999 (new BigDecimal(double))
        ((0, 0, 0, 0, 0, 1e-10), "P0Y0M0DT0H0M0S"),  # cut to 9 decimals, RoundingMode.DOWN
    ],
)
def test_interval_string(parts: tuple, expected: str) -> None:
    assert sem.interval_string(*parts) == expected


def test_round_half_up() -> None:
    assert sem.round_half_up(Decimal("1.005"), 2) == Decimal("1.01")
    assert sem.round_half_up(Decimal("-1.005"), 2) == Decimal("-1.01")


def test_value_conversion_error_names_everything() -> None:
    err = sem.ValueConversionError("price", "numeric", "abc", "not a number")
    assert isinstance(err, ValueError)
    assert str(err) == "cannot convert value 'abc' of column 'price' (type numeric): not a number"
