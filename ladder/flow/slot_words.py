"""A slot's id as words a listener understands, for a slot without a `label`.

"prescription_number" is already words; "nhs_no" spoken as it is would be "nhs no".
Known abbreviations are spelled out ("no" -> "number", "ref" -> "reference") and a
word with no vowel ("nhs", "mpan") is said letter by letter, as people say them.
"""

from __future__ import annotations

import re

ABBREVIATIONS = {
    "no": "number", "num": "number", "nr": "number", "nbr": "number", "ref": "reference", "refs": "references",
    "acct": "account", "acc": "account", "dob": "date of birth", "qty": "quantity", "amt": "amount",
    "addr": "address", "tel": "phone number", "ph": "phone", "rx": "prescription", "appt": "appointment",
    "apt": "appointment", "pkg": "package", "tkt": "ticket", "res": "reservation", "conf": "confirmation",
    "pw": "password", "pwd": "password", "pc": "postcode", "zip": "zip code", "msg": "message", "dept": "department",
    "emp": "employee", "cust": "customer", "mem": "membership", "reg": "registration", "veh": "vehicle",
    "lic": "licence", "pol": "policy", "ins": "insurance", "inv": "invoice", "ord": "order", "trk": "tracking",
    "id": "I D", "pin": "PIN", "otp": "one-time code", "cvv": "security code", "ssn": "social security number",
    "ni": "national insurance", "dl": "driving licence", "yr": "year", "mo": "month", "wk": "week",
    "hh": "household", "ppl": "people", "pax": "passengers", "nights": "nights",
}
_VOWELS = set("aeiouy")


def _word(token: str) -> tuple[str, bool]:
    """A token in words, and whether it was an abbreviation."""
    low = token.lower()
    if low in ABBREVIATIONS:
        return ABBREVIATIONS[low], ABBREVIATIONS[low] != low
    if low.isalpha() and len(low) >= 2 and not (set(low) & _VOWELS):
        return " ".join(low.upper()), True  # "nhs" -> "N H S"
    return low, False


def _tokens(slot_id: str) -> list[str]:
    # snake_case, kebab-case and camelCase alike
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", slot_id)
    return [t for t in re.split(r"[\s_\-.]+", spaced) if t]


def id_in_words(slot_id: str) -> str:
    """"nhs_no" -> "N H S number"; "prescription_number" -> "prescription number"."""
    return " ".join(_word(t)[0] for t in _tokens(slot_id)) or slot_id


def abbreviated(slot_id: str) -> bool:
    """Does the id hold an abbreviation (so a label would say it better)?"""
    return any(_word(t)[1] for t in _tokens(slot_id))


__all__ = ["ABBREVIATIONS", "abbreviated", "id_in_words"]
