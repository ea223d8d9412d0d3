"""`perfkb search` prints its results without rich.console when stdout is not a terminal
(kb/cli.py `_print_styled`): the text must be exactly what rich prints there, or rich prints it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from kb import cli

LINES = [
    [("12 entries for 'shmdt', showing 1-10", "bold")],
    [("\n1. ", ""), ("numa-shmdt-disconnect-storm", "bold cyan"), ("  score 85.17", "dim")],
    [(("   Disconnect storm burns kernel CPU in shmdt: the SGA is split " * 4).rstrip(), "")],
    [("   ", ""), ("… ten ", ""), ("shmdt", "bold yellow"), ("() calls — 24 ms apart …", "")],
    [("   Ünïcödé 漢字 wide and narrow, [bold]not markup[/bold] :smile:", "")],
]
TRICKY = [
    [("   a\ttab", "")],
    [("   a bell\x07 and a carriage\rreturn", "")],
    [("   trailing blanks   ", "")],
    [("   " + "long line " * 20 + "  ", "")],
    [("   no\u00a0break space", "")],
]


def _rich(lines, width: int = 80) -> str:
    buf = io.StringIO()
    console = Console(file=buf, highlight=False, soft_wrap=True, width=width)
    from rich.text import Text

    for line in lines:
        text = Text()
        for piece, style in line:
            text.append(piece, style=style)
        console.print(text)
    return buf.getvalue()


def _ours(lines, monkeypatch) -> str:
    buf = io.StringIO()
    monkeypatch.setattr(cli.sys, "stdout", buf)
    monkeypatch.setattr(cli.out, "_console", Console(file=buf, highlight=False, soft_wrap=True))
    cli._print_styled(lines)
    return buf.getvalue()


@pytest.mark.parametrize("lines", [LINES, *([t] for t in TRICKY)])
def test_plain_output_is_what_rich_prints(lines, monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    assert _ours(lines, monkeypatch) == _rich(lines)


def test_only_printable_text_without_trailing_blanks_skips_rich():
    assert all(cli._plain_safe("".join(p for p, _ in line)) for line in LINES)
    assert not any(cli._plain_safe("".join(p for p, _ in line)) for line in TRICKY)
