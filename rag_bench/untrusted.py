"""Untrusted text made safe to show: a dataset's questions, a generator's answers, the names and
notes people wrote in labels, values read from cell folders.

Such text reaches a terminal, an HTML page and a JUnit XML file. Written raw, an ESC or BEL
sequence sets the terminal's title or clears the screen, a carriage return overwrites the line
already printed, a NUL makes XML ill-formed, and a bidirectional override (U+202E) makes a text
read differently from the stored one. :func:`visible` writes each such character as a visible
``\\uXXXX`` escape; everything else is kept as it is (accents, other scripts, emoji, tab and
newline). The escape is also a valid JSON string escape of the same character, so a JSON line
passed through :func:`visible` still decodes to the same value.

:func:`control_characters` finds what a dataset may not hold in its texts (C0 controls other than
tab, newline and carriage return, DEL, C1 controls): dataset validation refuses them.
"""

from __future__ import annotations

import re

# Bidirectional formatting characters (Unicode's Bidi_Control): ALM, LRM, RLM, the embeddings and
# overrides LRE..RLO and PDF, the isolates LRI..PDI.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

# C0 controls but tab and newline, DEL, C1 controls, bidi controls, lone surrogates (not
# encodable as UTF-8) and the two noncharacters XML 1.0 excludes.
_SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI_CONTROLS + "\ud800-\udfff\ufffe\uffff]")
# What a dataset's text may not contain: C0 controls but tab, newline and carriage return; DEL; C1.
_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline, every bidirectional control and
    every code point UTF-8 or XML 1.0 cannot hold written as a visible ``\\uXXXX`` escape.

    >>> visible("name\\x1b]0;title\\x07 ok\\tdone\\n")
    'name\\\\u001b]0;title\\\\u0007 ok\\tdone\\n'
    >>> visible("abc\\u202edef")
    'abc\\\\u202edef'
    """
    return _SHOWN.sub(_escape, text)


def control_characters(text: str) -> list[tuple[int, str]]:
    """(position, ``U+XXXX``) of each character a dataset text may not hold (C0 controls other
    than tab, newline and carriage return; DEL; C1 controls).

    >>> control_characters("ok\\tfine\\r\\n but \\x1b[2J and \\x85")
    [(14, 'U+001B'), (23, 'U+0085')]
    """
    return [(m.start(), f"U+{ord(m.group()):04X}") for m in _REFUSED.finditer(text)]
