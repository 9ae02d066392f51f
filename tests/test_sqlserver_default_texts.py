"""2.7.4's SqlServerDefaultValueConverter on DEFAULT texts as SQL Server stores them (tests/data/sqlserver_defaults.yaml).

No server: each ``definitions`` case is a column's type and its ``sys.default_constraints.definition``;
the schema default cdc builds from it must be Debezium's (quotes cut but never undoubled, the innermost
parentheses, the JDK's parsers and their ranges, a throw meaning no default).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cdc_sqlserver.defaults import with_default
from cdc_sqlserver.types import ColumnInfo, TypeModes, mapping

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_defaults.yaml").read_text())["definitions"]


def _info(type_text: str, definition: str) -> ColumnInfo:
    """A nullable column of ``type_text`` (``numeric(10,3)``, ``varchar(20)``, ``money``) with that DEFAULT."""
    m = re.fullmatch(r"(\w+)(?:\((\d+)(?:,(\d+))?\))?", type_text)
    assert m, type_text
    name, first, second = m[1], int(m[2] or 0), int(m[3] or 0)
    precision, scale = (first, second) if name in ("numeric", "decimal") else (0, 0)
    scale = {"money": 4, "smallmoney": 4, "datetime": 3}.get(name, scale)
    scale = 7 if name in ("datetime2", "datetimeoffset", "time") else scale
    return ColumnInfo("c", 1, name, first, precision, scale, True, False, definition)


class _RefusingServer:
    """The server's PARSE, refusing every text (as SQL Server refuses ``etdate(``); remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, type_name: str, text: str) -> None:
        self.asked.append(text)
        raise ValueError(f"Error converting string value '{text}' into data type {type_name}")


@pytest.mark.parametrize("case", DATA, ids=[f"{c['type']} {c['definition']}" for c in DATA])
def test_default_text_as_debezium_parses_it(case):
    info = _info(case["type"], case["definition"])
    schema, convert = mapping(info, TypeModes(**case.get("modes", {})))
    server = _RefusingServer()
    got = with_default(schema, convert, info, server)
    default = got.to_json().get("default") if got is not None else None
    if "parse_text" in case:
        assert server.asked == [case["parse_text"]], "the text handed to SELECT PARSE(? AS ...)"
        assert default is None
    elif case.get("none"):
        assert default is None, f"{case['definition']} on {case['type']}: cdc {default!r}, Debezium no default"
    else:
        assert default == case["default"], f"{case['definition']} on {case['type']}"
        assert type(default) is type(case["default"]), f"{default!r} is not a {type(case['default']).__name__}"
