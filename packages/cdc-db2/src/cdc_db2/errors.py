"""Reading Db2 driver errors: the SQLSTATE, whether the connection broke, the first line of the message."""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^ibm_db_dbi::\w+:\s*")
_STATE = re.compile(r"SQLSTATE=(\w{5})")
#: SQLCODEs of a broken or refused connection (communication error, connection lost or re-routed).
_CONNECTION_CODES = ("SQL30081N", "SQL30108N", "SQL1224N", "SQL30080N", "SQL1776N")


def sqlstate(e: BaseException) -> str:
    """The SQLSTATE an ibm_db error message ends with ('' if none)."""
    m = _STATE.search(str(e))
    return m.group(1) if m else ""


def is_connection_error(e: BaseException) -> bool:
    """True for errors of the connection (SQLSTATE class 08, communication SQLCODEs), not of a statement."""
    text = str(e)
    return sqlstate(e).startswith("08") or any(code in text for code in _CONNECTION_CODES)


def first_line(e: BaseException) -> str:
    """The first line of a driver error's message, without ibm_db_dbi's ``ibm_db_dbi::<Class>:`` prefix."""
    return _PREFIX.sub("", (str(e).strip().splitlines() or [type(e).__name__])[0])
