"""Date cues for retrieval: session headers and the days, months and years questions name."""

from __future__ import annotations

import datetime as dt

from xai.memory import DateWindow, question_windows, session_date


def test_session_headers_of_both_datasets() -> None:
    assert session_date("1:56 pm on 8 May, 2023") == dt.date(2023, 5, 8)
    assert session_date("2023/05/20 (Sat) 02:21") == dt.date(2023, 5, 20)
    assert session_date("August 3, 2023") == dt.date(2023, 8, 3)
    assert session_date("sometime last spring") is None
    assert session_date("31 February, 2023") is None


def test_a_named_day_favours_that_day_and_the_fortnight_after() -> None:
    (window,) = question_windows("What did Maria share on 16 June, 2023?")
    assert window.precision == "day"
    assert window.weight(dt.date(2023, 6, 16)) == 1.0
    assert window.weight(dt.date(2023, 6, 25)) == 0.5  # "last week" told later
    assert window.weight(dt.date(2023, 7, 20)) == 0.0
    assert window.weight(dt.date(2023, 6, 10)) == 0.0


def test_months_and_years_and_both_orders() -> None:
    windows = question_windows("Where did Joanna travel in July 2022, and what about 2019?")
    assert [w.precision for w in windows] == ["month", "year"]
    month, year = windows
    assert month.weight(dt.date(2022, 7, 30)) == 1.0
    assert month.weight(dt.date(2022, 8, 10)) == 1.0  # told in early August
    assert month.weight(dt.date(2022, 9, 1)) == 0.0
    assert year.weight(dt.date(2019, 3, 1)) == 1.0
    assert question_windows("the week before August 3, 2023")[0] == DateWindow(
        dt.date(2023, 8, 2), dt.date(2023, 8, 4), "day"
    )
    assert question_windows("What is Caroline's identity?") == []
