# -*- coding: utf-8 -*-
"""Kubernetes resource quantities (``resource.Quantity``) as exact numbers, to compare what the role
renders with what the API server returns.

The API server stores a quantity in its canonical form: ``cpu: 1`` comes back as ``"1"``, ``1000m``
as ``"1"``, ``1.5`` as ``"1500m"``, ``0.5Gi`` as ``"512Mi"``. Compared as text or JSON they differ
and every reconcile would patch them again; compared as numbers they are equal.

What the API server does, and this module with it (k8s.io/apimachinery pkg/api/resource, and the
core/v1 defaulting of every ResourceList):

- ``<sign><digits>[.<digits>]<suffix>``, the suffix one of the decimal SI ``n u m k M G T P E``, the
  binary SI ``Ki Mi Gi Ti Pi Ei``, or a decimal exponent ``e<n>`` / ``E<n>`` (``E`` alone is exa);
  ``1.``, ``.5`` and ``1.G`` are accepted, a JSON number is read from its text;
- a value finer than a nano is rounded up (away from zero) to the next nano;
- a binary SI value is capped, silently, at 2^63-1;
- in a ResourceList (a container's ``resources.limits`` / ``requests``, a PVC's
  ``spec.resources.requests``) every value is then rounded up to a milli.

Values are ``fractions.Fraction``: exact, never a float.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_MAX = Fraction(2**63 - 1)
NANO = Fraction(1, 10**9)
MILLI = Fraction(1, 1000)
# Exponents beyond this are refused rather than computed (an 'e999999999' would take forever);
# the API server cannot hold them either.
_MAX_EXPONENT = 1000


def _round_away(value, step):
    """``value`` rounded away from zero to a multiple of ``step``."""
    steps = abs(value) / step
    whole = steps.numerator // steps.denominator
    if whole * steps.denominator != steps.numerator:
        whole += 1
    return (step * whole) if value >= 0 else -(step * whole)


def parse_quantity(value):
    """The exact value of ``value`` (a quantity string, an int or a float as a JSON number), or None
    when it is not a quantity (booleans, other text, None)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        text = repr(value)  # what json.dumps sends, and the API server then parses
    elif isinstance(value, str):
        text = value
    else:
        return None
    match = _QUANTITY.fullmatch(text)
    if not match or (not match.group("int") and match.group("frac") is None):
        return None
    fraction = match.group("frac") or ""
    suffix = match.group("suffix") or ""
    try:  # more digits than Python converts (4300) is no quantity anyone means
        number = Fraction(int((match.group("int") or "") + fraction or "0"), 10 ** len(fraction))
        exponent = 0 if suffix in _BINARY else _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    except ValueError:
        return None
    if abs(exponent) > _MAX_EXPONENT:
        return None
    binary = suffix in _BINARY
    number *= 2 ** _BINARY[suffix] if binary else Fraction(10) ** exponent
    if match.group("sign") == "-":
        number = -number
    number = _round_away(number, NANO)
    if binary and abs(number) > _BINARY_MAX:
        number = _BINARY_MAX if number > 0 else -_BINARY_MAX
    return number


def resource_list_value(value):
    """The value the API server keeps for ``value`` in a ResourceList (rounded up to a milli), or None."""
    number = parse_quantity(value)
    return None if number is None else _round_away(number, MILLI)


def same_quantity(live, wanted, resource_list=True):
    """Whether ``live`` and ``wanted`` are both quantities of the same value as the API server keeps
    them (``resource_list``: the milli rounding of a ResourceList applies)."""
    value_of = resource_list_value if resource_list else parse_quantity
    live_value, wanted_value = value_of(live), value_of(wanted)
    return live_value is not None and live_value == wanted_value
