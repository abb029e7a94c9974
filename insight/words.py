"""Figures as people read them: a duration in days, hours and minutes, a rate in per cent."""


def duration(seconds: int | None) -> str:
    """'—' for no figure; else the two largest units: '45 s', '12 min', '1 h 30 min', '2 d 5 h'."""
    if seconds is None:
        return "—"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def percent(rate: float | None) -> str:
    if rate is None:
        return "—"
    value = round(rate * 100, 1)
    return f"{value:g} %"
