"""Version strings compared as versions, never as strings: 12.2.0.1 < 12.2.0.1.0 <= 19.14 < 21.4,
and marketing names map to numbers ("19c" is 19, "11gR2" is 11.2, "12cR2" is 12.2)."""

from __future__ import annotations

import re
from functools import total_ordering

from kb.errors import InvalidVersion

_MARKETING = re.compile(r"^(\d{1,12})\s*[cgi](?:\s*r(?:elease)?\s*(\d{1,12}))?$", re.IGNORECASE)
_NUMERIC = re.compile(r"^\d{1,12}(?:\.\d{1,12}){0,11}$")  # bounded: int() of 5,000 digits raises
MAX_VERSION_TEXT = 64


@total_ordering
class Version:
    __slots__ = ("parts", "text")

    def __init__(self, text: str) -> None:
        raw = str(text).strip()
        if len(raw) > MAX_VERSION_TEXT:
            raise InvalidVersion(
                f"'{raw[:20]}…' ({len(raw)} characters) is too long for a version "
                f"(at most {MAX_VERSION_TEXT})"
            )
        self.text = raw
        s = raw.lower().removeprefix("v").strip()
        m = _MARKETING.match(s)
        if m:
            self.parts: tuple[int, ...] = (int(m.group(1)),) + (
                (int(m.group(2)),) if m.group(2) else ()
            )
        elif _NUMERIC.match(s):
            self.parts = tuple(int(p) for p in s.split("."))
        else:
            raise InvalidVersion(
                f"'{raw}' is not a version (use digits and dots like 19.14, or 19c / 11gR2)"
            )

    @property
    def major(self) -> int:
        return self.parts[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.parts == other.parts

    def __lt__(self, other: Version) -> bool:
        return self.parts < other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __repr__(self) -> str:
        return f"Version('{self.text}')"

    def __str__(self) -> str:
        return self.text


def is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True
