"""Printable text for messages: what a report or an error line shows of an exception or a path.

Whatever the processor raises and whatever path the user types, the text shown is printable
and bounded: an exception's traceback (``error_text``) or its one line (``error_line``), and
a path on one line (``shown_path``). These never raise for a pathological input.
"""

from __future__ import annotations

import os
import traceback

MAX_ERROR_TEXT = 20_000  # characters of a processor's traceback kept (its head and its tail)


def error_text(error: BaseException, limit: int = MAX_ERROR_TEXT) -> str:
    """``error``'s traceback as text, safe whatever the processor raised: an exception whose
    ``str()`` raises or returns a non-string is shown by its type, characters that cannot be
    printed (lone surrogates) are escaped, and a text over ``limit`` characters keeps its
    first and last halves around a note of how much was cut."""
    try:
        text = "".join(traceback.format_exception(error))
    except BaseException:  # noqa: BLE001 - a pathological exception object
        text = f"{type(error).__module__}.{type(error).__qualname__}: <the exception could not be formatted>\n"
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}\n... {len(text) - 2 * half} characters cut ...\n{text[-half:]}"
    return text


def error_line(error: BaseException, limit: int = 300) -> str:
    """``"Type: message"``, its first line, at most ``limit`` characters, printable whatever
    ``error``'s ``str()`` does (raises, returns a huge or unprintable text)."""
    try:
        message = str(error)
    except BaseException:  # noqa: BLE001 - a pathological exception object
        message = "<str() of the exception failed>"
    line = (f"{type(error).__name__}: {message}".splitlines() or [type(error).__name__])[0][:limit]
    return line.encode("utf-8", "backslashreplace").decode("utf-8")


def shown_path(path) -> str:
    """A path as one printable line: as it is when every character prints, else its Python
    ``repr`` (a newline or other control character shows as an escape, never a line break)."""
    text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    return text if text.isprintable() else repr(text)
