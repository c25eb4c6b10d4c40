# -*- coding: utf-8 -*-
"""Go duration strings (time.ParseDuration), as ansible-operator reads a requeue period."""

from __future__ import annotations

import re

_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,  # micro sign, accepted by Go
    "\u03bcs": 10**3,  # Greek small letter mu, accepted by Go
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_ELEMENT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_MAX_NANOSECONDS = 2**63 - 1  # Go's time.Duration is an int64 of nanoseconds


def parse_go_duration(text):
    """Return the number of nanoseconds in a positive Go duration string, or raise ValueError.

    Accepts what Go's time.ParseDuration accepts except signs and the bare "0", which cannot be a
    meaningful requeue period.
    """
    if not isinstance(text, str) or not text:
        raise ValueError("the period is empty")
    position = 0
    total = 0
    while position < len(text):
        match = _ELEMENT.match(text, position)
        if match is None:
            raise ValueError(
                "%r is not a Go duration: use numbers with units ns, us, ms, s, m or h, such as 10s or 1m30s" % text
            )
        number, unit = match.groups()
        total += int(round(float(number) * _UNIT_NANOSECONDS[unit]))
        position = match.end()
    if total <= 0:
        raise ValueError("the period %r must be greater than zero" % text)
    if total > _MAX_NANOSECONDS:
        raise ValueError("the period %r is longer than a Go duration can be" % text)
    return total
