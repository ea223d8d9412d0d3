"""The one interface every format parser implements.

Parsers are incremental so a 1 GB capture parses in bounded memory: the detector feeds lines one
at a time and asks for the finished Block at the end. A parser keeps aggregates (counts, sums,
top-N lists), never the whole input.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ingest.model import TEXT_CAP, Block, Format, Platform


class Parser(ABC):
    format: ClassVar[Format]

    @classmethod
    @abstractmethod
    def start_score(cls, line: str) -> int:
        """How strongly `line` says a block of this format starts here.

        0: not this format; 1: plausible (a line of this format, but also of others);
        2: certain (a header or a shape no other format has). The detector opens a block on 2,
        or on 1 when the next lines agree.
        """

    def __init__(self) -> None:
        self.lines = 0
        self.malformed = 0
        self.first_line = 0
        self.last_line = 0
        self._text: list[str] = []
        self._text_bytes = 0
        self.text_truncated = False

    @abstractmethod
    def feed(self, line: str) -> bool:
        """Consume one line (without its newline). Return False if the line does not belong to
        this block, so the detector can close it; the parser must then be unchanged by it.

        A line that belongs to the format but cannot be parsed is counted in `self.malformed` and
        accepted (returns True): malformed lines are never fatal. The detector itself counts
        accepted lines and keeps their text (`keep`), so parsers need not.
        """

    @abstractmethod
    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        """Return (facts, details, identifiers, platform) for the lines fed so far."""

    # -- shared helpers -------------------------------------------------------------------------

    def keep(self, line: str) -> None:
        """Remember raw text up to TEXT_CAP for text conditions and display."""
        if self.text_truncated:
            return
        size = len(line) + 1
        if self._text_bytes + size > TEXT_CAP:
            self.text_truncated = True
            return
        self._text.append(line)
        self._text_bytes += size

    def finish(self, start_line: int, end_line: int) -> Block:
        facts, details, identifiers, platform = self.facts()
        return Block(
            format=self.format,
            platform=platform,
            start_line=start_line,
            end_line=end_line,
            lines=self.lines,
            malformed_lines=self.malformed,
            facts=facts,
            details=details,
            identifiers=identifiers,
            text="\n".join(self._text),
            text_truncated=self.text_truncated,
        )
