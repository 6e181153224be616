"""CSV files that a spreadsheet opens as data: a text cell that would run as a formula is written as text.

Excel, LibreOffice Calc and Google Sheets evaluate a CSV cell that starts with ``=``, ``+``, ``-``
or ``@`` as a formula (a leading tab or carriage return is skipped first), so a cell label such as
``=1+2``, a question copied from a corpus or a generated answer could run ``=HYPERLINK(..)`` or
``=cmd|..`` on the machine of whoever opens the file (OWASP, "CSV Injection"). Every CSV file
rag_bench writes (``leaderboard --format csv``, a cell's ``failures.csv``) goes through
:func:`to_csv`, which does what OWASP advises: a *text* cell (or column name) starting with one
of those six characters is written with a single quote ``'`` in front. A spreadsheet then shows
the text as it is; a script reading the file sees the quote and may strip it.

Numbers are never changed: a numeric column's ``-0.5`` is written as ``-0.5``. Text that is
exactly a number (``-3``, ``+1.5e3``) is kept too: a spreadsheet reads it as that number, never
as a formula.

>>> import pandas as pd
>>> print(to_csv(pd.DataFrame({"label": ["=1+2", "-3", "@SUM(A1)", "fixed"], "delta": [-0.5, 1.0, -2.0, 0.0]})), end="")
label,delta
'=1+2,-0.5
-3,1.0
'@SUM(A1),-2.0
fixed,0.0
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

# What makes a spreadsheet evaluate a cell (OWASP's list): formula starts, and the tab and
# carriage return that spreadsheets skip before looking at the next character.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralize(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula; any
    other value (a number, None, text that is exactly a number) unchanged.

    >>> neutralize("=HYPERLINK(\\"http://x\\")"), neutralize("\\t=1"), neutralize("-2.5"), neutralize(-2.5)
    ('\\'=HYPERLINK("http://x")', "'\\t=1", '-2.5', -2.5)
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def to_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """``frame.to_csv(path, index=False)`` with every text cell and column name passed through
    :func:`neutralize`: the text when ``path`` is None, else None (the file is written).
    Numeric, boolean and date columns are written as pandas writes them."""
    safe = frame.copy()
    for column in safe.columns:
        dtype = safe[column].dtype
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype)):
            safe[column] = safe[column].astype(object).map(neutralize)
    safe.columns = [neutralize(str(c)) for c in safe.columns]
    return safe.to_csv(path, index=False)
