"""Checks that turn a regex candidate into a finding: Luhn, IBAN mod-97, SSN ranges, ...

A validator takes the matched text and returns True when it is the real thing.
They exist because a regex alone cannot tell a card number from any 16 digits:
the checksum is what keeps ordinary numbers out of the findings.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

Validator = Callable[[str], bool]


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def luhn(text: str) -> bool:
    """Payment card number: 12-19 digits (12: Maestro) whose Luhn (mod 10) checksum is 0
    (ISO/IEC 7812-1)."""
    digits = _digits(text)
    if not 12 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# IBAN length per country, from the SWIFT IBAN Registry (ISO 13616), as tabulated by
# django-localflavor (registry release 78) plus the countries added since (BI, DJ, EG, FK,
# HN, LY, MN, NI, OM, RU, SD, SO, YE). https://www.swift.com/standards/data-standards/iban
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
}


def iban(text: str) -> bool:
    """IBAN: known country, that country's length, and the ISO 7064 mod 97-10 check == 1."""
    value = "".join(text.split()).upper()
    if IBAN_LENGTHS.get(value[:2]) != len(value) or not value.isalnum() or not value.isascii():
        return False
    rearranged = value[4:] + value[:4]
    # int(ch, 36) maps 0-9 to themselves and A-Z to 10-35, exactly the IBAN letter rule.
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


# Numbers the SSA voided after they were printed in advertising (078-05-1120 from a
# wallet insert, 219-09-9999 from an SSA pamphlet) and the placeholder every form shows.
_SSN_VOID = frozenset({"078051120", "219099999", "123456789"})


def ssn(text: str) -> bool:
    """US SSN: area not 000, 666 or 900-999; group not 00; serial not 0000 (SSA rules)."""
    digits = _digits(text)
    if len(digits) != 9 or digits in _SSN_VOID:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def phone(text: str) -> bool:
    """Phone number: 7 to 15 digits (ITU-T E.164 caps a number at 15 digits), not
    counting an extension (x123, ext. 123)."""
    number = text.lower().split("x", 1)[0]
    return 7 <= len(_digits(number)) <= 15


def phone_national(text: str) -> bool:
    """National number with its trunk 0 / 00 prefix: 8 to 13 digits, not a filler
    (one digit repeated, or a counting run such as 0123456789)."""
    digits = _digits(text)
    return 8 <= len(digits) <= 13 and len(set(digits[1:])) > 2 and digits not in _COUNTING


_COUNTING = "0123456789012"


def ipv6(text: str) -> bool:
    """IPv6 address that parses, with at least three non-empty groups.

    Two-group forms (``::1``, ``fe80::1``, ``a::b``) are loopback/link-local at best and
    C++/Rust paths (``std::io``) at worst, so they are not reported.
    """
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    head = text.split(".")[0] if "." in text else text
    return sum(1 for group in head.split(":") if group) >= 3


VALIDATORS: dict[str, Validator] = {
    "luhn": luhn,
    "iban": iban,
    "ssn": ssn,
    "phone": phone,
    "phone_national": phone_national,
    "ipv6": ipv6,
}
