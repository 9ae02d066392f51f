"""Reading the ODBC driver's errors: connection errors versus statement errors, and their first line."""

from __future__ import annotations


def is_connection_error(e: BaseException) -> bool:
    """True for errors of the connection (SQLSTATE class 08), not of a statement."""
    name = type(e).__name__
    state = e.args[0] if getattr(e, "args", None) else ""
    return name == "OperationalError" or (isinstance(state, str) and state.startswith("08"))


def first_line(e: BaseException) -> str:
    """The first line of a driver error's message (pyodbc: its second argument)."""
    text = str(e.args[1]) if len(getattr(e, "args", ())) > 1 else str(e)
    return (text.strip().splitlines() or [type(e).__name__])[0]
