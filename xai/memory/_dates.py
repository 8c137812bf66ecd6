"""Dates in session headers and in queries, for retrieval's time cues.

LoCoMo dates sessions like ``1:56 pm on 8 May, 2023``; LongMemEval like
``2023/05/20 (Sat) 02:21``. Questions name days (``on 3 June, 2023``,
``August 3, 2023``), months (``in July 2022``) or years. A question's date
becomes a window of session dates worth favouring: people tell of an event in
the conversation held that day or within the next two weeks ("last week").
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal, NamedTuple

__all__ = ["DateWindow", "day_of", "question_windows", "session_date", "session_time"]

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s*{_MONTH},?\s*(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s*(\d{{1,2}})(?:st|nd|rd|th)?,?\s*(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s*(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_NUMERIC = re.compile(r"\b(\d{4})[/-](\d{1,2})[/-](\d{1,2})\b")

_FOLLOWING_DAYS = 14
"""How long after an event people still tell of it as news."""


def _month(name: str) -> int:
    return MONTHS.index(next(m for m in MONTHS if m.startswith(name.lower()[:3]))) + 1


def _date(year: str, month: int, day: str) -> dt.date | None:
    try:
        return dt.date(int(year), month, int(day))
    except ValueError:
        return None


def session_date(text: str) -> dt.date | None:
    """The calendar day of a session header, or None when it names none."""
    if match := _DAY_MONTH_YEAR.search(text):
        return _date(match[3], _month(match[2]), match[1])
    if match := _MONTH_DAY_YEAR.search(text):
        return _date(match[3], _month(match[1]), match[2])
    if match := _NUMERIC.search(text):
        return _date(match[1], int(match[2]), match[3])
    return None


_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\s*(am|pm)?\b", re.I)


def session_time(text: str) -> float | None:
    """Seconds since the epoch (UTC) of a session header such as ``1:56 pm on 8 May, 2023``
    or ``2023/05/20 (Sat) 02:21``; the day's midnight when no clock time is given."""
    day = session_date(text)
    if day is None:
        return None
    hours = minutes = 0
    rest = _NUMERIC.sub(" ", text)
    if match := _CLOCK.search(rest):
        hours, minutes = int(match[1]) % 24, int(match[2]) % 60
        if match[3] and match[3].lower() == "pm" and hours < 12:
            hours += 12
        elif match[3] and match[3].lower() == "am" and hours == 12:
            hours = 0
    moment = dt.datetime(day.year, day.month, day.day, hours, minutes, tzinfo=dt.UTC)
    return moment.timestamp()


def day_of(at: float) -> dt.date:
    """The calendar day (UTC) of a moment in seconds since the epoch."""
    return dt.datetime.fromtimestamp(at, dt.UTC).date()


class DateWindow(NamedTuple):
    """Session dates from ``start`` to ``end`` (inclusive) that a question points at."""

    start: dt.date
    end: dt.date
    precision: Literal["day", "month", "year"]

    def weight(self, day: dt.date) -> float:
        """1 inside the window; for a named day, 0.5 in the fortnight after it; else 0."""
        if self.start <= day <= self.end:
            return 1.0
        if self.precision == "day" and self.end < day <= self.end + dt.timedelta(_FOLLOWING_DAYS):
            return 0.5
        return 0.0


def question_windows(question: str) -> list[DateWindow]:
    """Every day, month or year the question names, as windows of session dates."""
    out: list[DateWindow] = []
    rest = question
    for pattern, order in ((_DAY_MONTH_YEAR, (3, 2, 1)), (_MONTH_DAY_YEAR, (3, 1, 2))):
        for match in pattern.finditer(rest):
            year, month, day = (match[i] for i in order)
            if (found := _date(year, _month(month), day)) is not None:
                one = dt.timedelta(days=1)
                out.append(DateWindow(found - one, found + one, "day"))
        rest = pattern.sub(" ", rest)
    for match in _MONTH_YEAR.finditer(rest):
        year, month = int(match[2]), _month(match[1])
        following = dt.date(year + month // 12, month % 12 + 1, 1)
        out.append(
            DateWindow(dt.date(year, month, 1), following + dt.timedelta(_FOLLOWING_DAYS), "month")
        )
    rest = _MONTH_YEAR.sub(" ", rest)
    for match in _YEAR.finditer(rest):
        year = int(match[1])
        out.append(
            DateWindow(
                dt.date(year, 1, 1), dt.date(year, 12, 31) + dt.timedelta(_FOLLOWING_DAYS), "year"
            )
        )
    return out
