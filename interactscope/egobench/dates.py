"""The task's "today", parsed from its Instruction ("today is May 7, 2026", "today is the
third Thursday of August 2026", "today is two days before August 31, 2026", ...)."""

from __future__ import annotations

import calendar
import datetime as dt
import re

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "last": -1,
}
_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a": 1,
}
_TODAY = re.compile(r"\btoday is ([^.;]*?\d{4})", re.IGNORECASE)


def _count(word: str) -> int:
    w = word.lower()
    if w.isdigit():
        return int(w)
    if w in _NUMBERS:
        return _NUMBERS[w]
    if w in _ORDINALS and _ORDINALS[w] > 0:
        return _ORDINALS[w]
    raise ValueError(word)


def parse_date_phrase(text: str) -> dt.date:
    """A date phrase -> date. Raises ValueError when the phrase is not understood.

    Forms: ``Month D, YYYY``; ``YYYY-MM-DD``; ``the ORD WEEKDAY of Month YYYY`` (ORD first ...
    fifth or last); ``the last day of Month YYYY``; ``the WEEKDAY of the week containing DATE``
    (weeks run Monday-Sunday); ``N days|weeks before|after DATE`` and ``the ORD day after
    DATE`` (N in digits or words), nested."""
    s = text.strip().rstrip(",").strip()
    s = (
        re.sub(r"^the\s+", "", s, flags=re.IGNORECASE)
        if not re.match(r"(?i)the\s+\w+\s+(day|week)s?\s+(before|after)", s)
        else s
    )
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s)
    if m:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    m = re.fullmatch(r"([A-Za-z]+)\s+(\d{1,2}),?\s+(\d{4})", s)
    if m and m[1].lower() in _MONTHS:
        return dt.date(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
    m = re.fullmatch(r"(?:the\s+)?(\w+)\s+(days?|weeks?)\s+(before|after)\s+(.+)", s, re.I)
    if m:
        n = _count(m[1]) * (7 if m[2].lower().startswith("week") else 1)
        base = parse_date_phrase(m[4])
        return base + dt.timedelta(days=n if m[3].lower() == "after" else -n)
    m = re.fullmatch(r"last day of ([A-Za-z]+)\s+(\d{4})", s, re.I)
    if m and m[1].lower() in _MONTHS:
        y, mo = int(m[2]), _MONTHS[m[1].lower()]
        return dt.date(y, mo, calendar.monthrange(y, mo)[1])
    m = re.fullmatch(r"(\w+)\s+([A-Za-z]+day)\s+of\s+([A-Za-z]+)\s+(\d{4})", s, re.I)
    if m and m[1].lower() in _ORDINALS and m[2].lower() in _WEEKDAYS:
        y, mo, wd = int(m[4]), _MONTHS[m[3].lower()], _WEEKDAYS[m[2].lower()]
        days = [
            d
            for d in range(1, calendar.monthrange(y, mo)[1] + 1)
            if dt.date(y, mo, d).weekday() == wd
        ]
        k = _ORDINALS[m[1].lower()]
        return dt.date(y, mo, days[k - 1 if k > 0 else -1])
    m = re.fullmatch(r"([A-Za-z]+day)\s+of\s+the\s+week\s+containing\s+(.+)", s, re.I)
    if m and m[1].lower() in _WEEKDAYS:
        base = parse_date_phrase(m[2])
        return base + dt.timedelta(days=_WEEKDAYS[m[1].lower()] - base.weekday())
    raise ValueError(f"date phrase not understood: {text!r}")


def parse_today(instruction: str) -> tuple[dt.date | None, str | None]:
    """(date, phrase) of the first "today is ..." in an Instruction; (None, None) when there is
    none. Raises ValueError when a phrase is present but not understood."""
    m = _TODAY.search(instruction)
    if not m:
        return None, None
    phrase = m[1]
    return parse_date_phrase(phrase), phrase
