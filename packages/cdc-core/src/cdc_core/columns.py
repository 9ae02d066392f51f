"""Column mappers: masking, hashing, truncation and source-type propagation, per matching column.

Each ``column.*`` family of properties names anchored regexes over ``schema.table.column``; a
matching column gets a replaced converter (and, for propagation, schema parameters). Mappers run
once per table version, never per event.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cdc_core.config import Config
from cdc_core.config.fields import InvalidValue, _parse_regex_list
from cdc_core.errors import ConfigError
from cdc_core.relational import Column, TableId
from cdc_core.schema import Schema

_TRUNCATE = re.compile(r"column\.truncate\.to\.(\d+)\.chars")
_MASK = re.compile(r"column\.mask\.with\.(\d+)\.chars")
_HASH = re.compile(r"column\.mask\.hash\.(v2\.)?(.+?)\.with\.salt\.(.+)")
PROPAGATE_COLUMNS = "column.propagate.source.type"
PROPAGATE_TYPES = "datatype.propagate.source.type"

#: The property-name prefixes this module owns (accepted by validation).
PREFIXES = ("column.truncate.to.", "column.mask.with.", "column.mask.hash.")

# Java MessageDigest names -> hashlib names.
_ALGORITHMS = {"md2": None, "md5": "md5", "sha-1": "sha1", "sha1": "sha1", "sha-224": "sha224", "sha-256": "sha256",
               "sha-384": "sha384", "sha-512": "sha512", "sha-512/224": "sha512_224", "sha-512/256": "sha512_256",
               "sha3-224": "sha3_224", "sha3-256": "sha3_256", "sha3-384": "sha3_384", "sha3-512": "sha3_512"}


def _java_serialized(value: str) -> bytes:
    """The bytes of ``ObjectOutputStream.writeObject(String)``: what hashing strategy v1 digests."""
    data = bytearray()
    for ch in value:  # Java's modified UTF-8
        cp = ord(ch)
        if 0 < cp < 0x80:
            data.append(cp)
        elif cp < 0x800:
            data += bytes((0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)))
        elif cp < 0x10000:
            data += bytes((0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)))
        else:  # a surrogate pair, each half encoded on its own
            cp -= 0x10000
            for unit in (0xD800 | (cp >> 10), 0xDC00 | (cp & 0x3FF)):
                data += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    return b"\xac\xed\x00\x05t" + len(data).to_bytes(2, "big") + bytes(data)


def _hasher(algorithm: str, salt: str, v2: bool, length: int | None) -> Callable[[str], str]:
    name = _ALGORITHMS.get(algorithm.lower(), algorithm.lower().replace("-", ""))
    if name is None or name not in hashlib.algorithms_available:
        raise InvalidValue(f"unknown hash algorithm {algorithm!r}")
    salt_bytes = salt.encode()

    def mask(value: Any) -> str:
        text = value if isinstance(value, str) else str(value)
        digest = hashlib.new(name, salt_bytes + (text.encode() if v2 else _java_serialized(text))).hexdigest()
        return digest[:length] if length and length < len(digest) else digest

    return mask


def _then(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda raw: second(first(raw))


class ColumnMappers:
    """The column transformations a configuration asks for, applied to each captured column."""

    def __init__(self, config: Config):
        self.rules: list[tuple[list[re.Pattern[str]], str, Any]] = []
        problems = []
        for name, raw in config.items():
            kind = arg = None
            if m := _TRUNCATE.fullmatch(name):
                kind, arg = "truncate", int(m.group(1))
            elif m := _MASK.fullmatch(name):
                kind, arg = "mask", int(m.group(1))
            elif m := _HASH.fullmatch(name):
                kind, arg = "hash", (m.group(2), m.group(3), bool(m.group(1)))
                if _ALGORITHMS.get(m.group(2).lower(), m.group(2).lower().replace("-", "")) not in hashlib.algorithms_available:
                    problems.append(f"{name}: unknown hash algorithm {m.group(2)!r}")
                    continue
            elif name in (PROPAGATE_COLUMNS, PROPAGATE_TYPES):
                kind = name
            if kind is None:
                continue
            try:
                # Debezium matches every column.* / datatype.* list case-insensitively
                # (Predicates.includes(..., Pattern.CASE_INSENSITIVE)).
                patterns = [re.compile(p.pattern, re.IGNORECASE) for p in _parse_regex_list(str(raw))]
                self.rules.append((patterns, kind, arg))
            except InvalidValue as e:
                problems.append(f"{name}: {e}")
        if problems:
            raise ConfigError(problems)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def apply(self, table: TableId, column: Column) -> Column:
        """The column as value fields carry it: converter and schema changed by every matching rule.

        Keys never go through the mappers (Debezium's key generator has none): no masking and no
        source-type parameters in key fields.
        """
        names = table.names
        column_names = [f"{n}.{column.name}" for n in names]
        type_names = [f"{n}.{column.type_name}" for n in names]
        convert, schema, extra = column.convert, column.schema, column.extra
        for patterns, kind, arg in self.rules:
            subjects = type_names if kind == PROPAGATE_TYPES else column_names
            if not any(p.fullmatch(subject) for p in patterns for subject in subjects):
                continue
            if kind in ("truncate", "mask", "hash") and schema.type != "string":
                continue  # these apply to character-based columns only
            # The schema parameters are Debezium's ColumnMapper.alterFieldSchema: TruncateColumn's
            # ``truncateLength`` (only where truncation is possible) and MaskStrings' ``masked``.
            if kind == "truncate":
                if column.length is not None and 0 <= column.length <= arg:
                    continue  # values cannot be longer: Debezium leaves the column alone
                convert = _then(convert, lambda v, n=arg: v[:n] if isinstance(v, str) else v)
                schema = _with_parameter(schema, "truncateLength", str(arg))
            elif kind == "mask":
                convert = (lambda _v, masked="*" * arg: masked)
                extra = {**extra, "null_value": "*" * arg}  # NULLs too (MaskingValueConverter ignores its input)
                schema = _with_parameter(schema, "masked", "true")
            elif kind == "hash":
                algorithm, salt, v2 = arg
                convert = _then(convert, _hasher(algorithm, salt, v2, column.length))
                schema = _with_parameter(schema, "masked", "true")
            else:
                schema = _with_source_type(schema, column)
        if convert is column.convert and schema is column.schema:
            return column
        return replace(column, convert=convert, schema=schema, extra=extra)


def _with_parameter(schema: Schema, name: str, value: str) -> Schema:
    """The schema with one more parameter."""
    return replace(schema, parameters={**(schema.parameters or {}), name: value}, _json=[])


def _with_source_type(schema: Schema, column: Column) -> Schema:
    """PropagateSourceMetadataToSchemaParameter: type (upper case), length and scale where known, comment, name."""
    params = dict(schema.parameters or {})
    params["__debezium.source.column.type"] = column.type_name.upper()
    if column.length is not None and column.length != -1:
        params["__debezium.source.column.length"] = str(column.length)
    if column.scale is not None:
        params["__debezium.source.column.scale"] = str(column.scale)
    comment = column.extra.get("comment")
    if comment:
        params["__debezium.source.column.comment"] = comment
    # The column's own name, before field.name.adjustment.mode renames the field.
    params["__debezium.source.column.name"] = column.name
    return Schema(schema.type, optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
                  parameters=params, default=schema.default, fields=schema.fields, items=schema.items,
                  keys=schema.keys, values=schema.values)
