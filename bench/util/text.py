"""Text from result files, children and the command line, made safe to show.

Such text is data, never markup or code: rich would read '[red]' or '[link=...]' in a
GPU name or an error message as markup (and a stray '[/x]' crashes it); a terminal obeys
escape sequences (ESC ] 52 writes the clipboard); Markdown renders '<img onerror>',
'[a](javascript:...)' and '|' that breaks a table; a spreadsheet runs a CSV cell
beginning with '=' as a formula. Every untrusted string goes through one of these.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich only where a table is drawn: noxfile imports bench's file helpers
    from rich.text import Text

# C0 controls but tab and newline, DEL, C1 controls: shown as \\xNN, never sent raw; lone
# surrogates (a file name that is no UTF-8, which a strict stream refuses), and the
# characters that reorder or hide text (bidi overrides and isolates, zero-width marks,
# line and paragraph separators: 'Trojan Source') as \\uNNNN.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
_BREAKS = re.compile(r"[\n\t]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def visible(text: str) -> str:
    """Control characters written out as \\xNN, lone surrogates as \\uNNNN."""
    return _CONTROL.sub(_escaped, text)


def one_line(text: str) -> str:
    """As `visible`, and a newline or tab too: a message that must stay one line (a file
    named 'a\\nbench: error: ...' forges no second line)."""
    return _BREAKS.sub(_escaped, visible(text))


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def plain(text: str | Text, style: str = "") -> Text:
    """A rich Text that is never parsed as markup, controls made visible (a Text made
    by bench already passes unchanged)."""
    from rich.text import Text

    return text if isinstance(text, Text) else Text(visible(str(text)), style=style)


def markdown(text: str) -> str:
    """One Markdown table cell or line of text: HTML's '&', '<', '>' as entities (raw
    HTML passes through Markdown), Markdown's punctuation backslash-escaped, line
    breaks as spaces."""
    text = visible(str(text)).replace("\n", " ")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def csv_cell(value: Any) -> Any:
    """A text cell with its control characters made visible, and a leading quote where
    a spreadsheet would run it as a formula (OWASP's advice); numbers and other values
    pass unchanged."""
    if not isinstance(value, str):
        return value
    value = visible(value)
    return "'" + value if value.startswith(_FORMULA_START) else value
