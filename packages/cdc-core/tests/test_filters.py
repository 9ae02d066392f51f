"""Table and column filters: Debezium's anchored include/exclude regex lists."""

from __future__ import annotations

import re

import pytest

from cdc_core.config import Config
from cdc_core.errors import ConfigError
from cdc_core.filters import ColumnFilter, TableFilter
from cdc_core.relational import TableId

SYSTEM = frozenset({"pg_catalog", "information_schema"})
TABLES = [
    TableId(None, "public", "customers"),
    TableId(None, "public", "cust"),
    TableId(None, "public", "orders"),
    TableId(None, "inventory", "customers"),
    TableId(None, "pg_catalog", "pg_class"),
    TableId("shop", None, "items"),
]


def captured(props: dict) -> list[str]:
    table_filter = TableFilter(Config(props), SYSTEM)
    return [t.identifier for t in TABLES if table_filter.includes(t)]


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, ["public.customers", "public.cust", "public.orders", "inventory.customers", "shop.items"]),
        ({"table.include.list": "public.cust"}, ["public.cust"]),  # anchored: not public.customers
        ({"table.include.list": "public.cust.*"}, ["public.customers", "public.cust"]),
        ({"table.include.list": ".*customers"}, ["public.customers", "inventory.customers"]),
        ({"table.include.list": "public.customers, inventory.customers"}, ["public.customers", "inventory.customers"]),
        ({"table.exclude.list": "public.cust"}, ["public.customers", "public.orders", "inventory.customers", "shop.items"]),
        ({"table.exclude.list": "public\\..*"}, ["inventory.customers", "shop.items"]),
        ({"schema.include.list": "inventory"}, ["inventory.customers", "shop.items"]),
        ({"schema.include.list": "pub"}, ["shop.items"]),  # anchored; tables without a schema are not schema-filtered
        ({"schema.exclude.list": "public"}, ["inventory.customers", "shop.items"]),
        # Built-in tables are never captured, whatever the lists say (table.ignore.builtin).
        ({"schema.include.list": "pg_catalog"}, ["shop.items"]),
        ({"table.include.list": "pg_catalog.pg_class"}, []),
        ({"table.include.list": ".*"}, ["public.customers", "public.cust", "public.orders", "inventory.customers", "shop.items"]),
        ({"schema.include.list": "public", "table.include.list": "inventory.customers"}, []),
        ({"schema.include.list": "public", "table.exclude.list": "public.orders"}, ["public.customers", "public.cust", "shop.items"]),
        ({"table.include.list": "shop.items"}, ["shop.items"]),  # catalog.table where there is no schema
    ],
)
def test_table_filter(props: dict, expected: list[str]) -> None:
    assert captured(props) == expected


@pytest.mark.parametrize(
    ("raw", "patterns"),
    [
        ("a,b", ["a", "b"]),
        (" a , b ,", ["a", "b"]),
        ("public.t\\,x,public.y", ["public.t,x", "public.y"]),
        ("public\\.t{1\\,3}", ["public\\.t{1,3}"]),
    ],
)
def test_regex_lists_split_on_unescaped_commas(raw: str, patterns: list[str]) -> None:
    from cdc_core.config import common

    assert [p.pattern for p in Config({"table.include.list": raw}).get(common.TABLE_INCLUDE)] == patterns


def test_escaped_comma_inside_a_quantifier_matches() -> None:
    table_filter = TableFilter(Config({"table.include.list": "public\\.c.{3\\,4}"}))
    assert [t.identifier for t in TABLES if table_filter.includes(t)] == ["public.cust"]


def test_invalid_regex_is_a_config_error_naming_the_property() -> None:
    with pytest.raises(ConfigError) as err:
        TableFilter(Config({"table.include.list": "public.[a"}))
    [problem] = err.value.problems
    assert problem.startswith("table.include.list: 'public.[a' is not a valid regular expression")


@pytest.mark.parametrize(
    ("props", "column", "included"),
    [
        ({}, "email", True),
        ({"column.exclude.list": "public.customers.email"}, "email", False),
        ({"column.exclude.list": "public.customers.e"}, "email", True),  # anchored
        ({"column.exclude.list": "public.customers.e.*"}, "email", False),
        ({"column.include.list": "public.customers.(id|name)"}, "email", False),
        ({"column.include.list": "public.customers.(id|name)"}, "name", True),
        ({"column.include.list": "customers.name"}, "name", False),  # the schema is part of the name
    ],
)
def test_column_filter(props: dict, column: str, included: bool) -> None:
    assert ColumnFilter(Config(props)).includes(TableId(None, "public", "customers"), column) is included


def test_builtin_tables_are_never_captured_even_when_listed() -> None:
    # Debezium's PostgreSQL SystemTablesPredicate: system schemas, pg_temp* schemas, and
    # extension tables such as PostGIS' spatial_ref_sys in any schema (case-insensitive).
    f = TableFilter(Config({"table.include.list": ".*"}), frozenset({"pg_catalog"}), frozenset({"spatial_ref_sys"}),
                    ("pg_temp",))
    assert not f.includes(TableId(None, "public", "spatial_ref_sys"))
    assert not f.includes(TableId(None, "gis", "Spatial_Ref_Sys"))
    assert not f.includes(TableId(None, "pg_temp_3", "t"))
    assert not f.includes(TableId(None, "pg_catalog", "pg_class"))
    assert f.includes(TableId(None, "public", "spatial_ref_sys_copy"))


def test_snapshot_order_follows_the_include_list_then_names() -> None:
    from cdc_core.filters import snapshot_order

    names = ["public.b", "public.a", "public.z2", "public.z1", "other.x"]
    include = [re.compile(p) for p in ("public\\.z.*", "public\\.b", "public\\.[ab]")]
    assert snapshot_order(names, include) == ["public.z1", "public.z2", "public.b", "public.a", "other.x"]
    assert snapshot_order(names, None) == sorted(names)
