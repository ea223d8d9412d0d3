"""An uploaded HTML report (awrrpt_*.html, a Statspack or ASH report saved as HTML) as the text
its parsers read.

AWR's HTML report holds the same tables as its text twin, as <table> rows of <th>/<td> cells
under <h3> titles (or a bare `<p />Load Profile<p />`). Rather than a second reader for every
section, each table is laid out as the text report lays it out: header cells, a dashed ruler
under each column, cells right-aligned to the column's edge, so the one waits parser reads both
and the two give the same facts. The markup is read by an HTML parser, never by regular
expressions over markup: libxml2's, through lxml's parser-target interface, which calls the
renderer for each tag and run of text and builds no tree. Script and style content is dropped;
nothing is rendered or executed. Memory stays bounded: text is handed on a table at a time, and
a table keeps at most MAX_ROWS rows.

Why libxml2 and not the standard library's HTMLParser, which read these documents until
2026-12-03: its tokenizer is Python, 77 % of a whole parse of the corpus's 1 MB AWR page (09,
cProfile). Behind libxml2 the same renderer lays the page out in 0.35-0.45x the time and the
whole parse takes 0.56-0.67x (benchmarks/html_page.py; docs/benchmarks.md). The stdlib
tokenizer is kept as the reference (`reference_html_lines`): tests hold the two to the same
lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from lxml import etree

MAX_ROWS = 5000  # rows kept per table (AWR's longest, SQL text lists, stay far below)
MAX_CELL = 80  # characters kept per cell: SQL text and module names are long
MAX_COLUMNS = 40
MAX_TEXT = 64 * 1024  # characters of one line of text outside tables (the detector cuts there)
SNIFF = 4096  # characters looked at to tell HTML from text

_BLOCK_TAGS = frozenset(
    {"p", "br", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "hr", "pre", "tr"}
)
_SKIP_TAGS = frozenset({"script", "style", "head", "title"})
_RE_DOCTYPE = re.compile(
    r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.{0,2000}?-->\s*){0,3}(?:<!doctype\s+html|<html[\s>])",
    re.I | re.S,
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_RE_NUMBER = re.compile(r"^[-+]?[\d.,]+\s*[KMGT]?(?:ns|us|ms|s)?%?$")


def looks_like_html(sample: str) -> bool:
    """Does an input starting with `sample` hold an HTML document (not a paste that mentions
    a tag)? Only the start is looked at: a document begins with its doctype or <html>."""
    return _RE_DOCTYPE.match(sample[:SNIFF]) is not None


class _Renderer:
    """The document's text, built from its tags and text as a parser reports them: lxml's
    parser-target interface (start, end, data, close), which the reference tokenizer below
    calls too, so there is one renderer whatever tokenizes."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self._text: list[str] = []
        self._skip = 0
        self._tables: list[list[tuple[bool, list[str]]]] = []  # open tables (nested allowed)
        self._row: list[str] | None = None
        self._row_header = False
        self._cell: list[str] | None = None

    # -- text outside tables --------------------------------------------------------------------

    def _flush_text(self, prefix: str = "") -> None:
        text = " ".join("".join(self._text).split())
        self._text = []
        if text:
            self.out.append(prefix + text)

    def start(self, tag: str, attrib: object = None) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
            return
        if tag == "table":
            self._flush_text()
            self._tables.append([])
        elif tag == "tr" and self._tables:
            self._row = []
            self._row_header = False
        elif tag in ("td", "th") and self._tables:
            if self._row is None:
                self._row = []
            self._cell = []
            if tag == "th":
                self._row_header = True
        elif tag == "br" and self._cell is not None:
            # a line break inside a cell separates words (a parser cannot tell <br> from <br/>)
            self._cell.append(" ")
        elif tag in _BLOCK_TAGS and not self._tables:
            self._flush_text()
            if tag == "li":
                self._text.append("-> ")

    def end(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            text = " ".join("".join(self._cell).replace("\xa0", " ").split())
            self._row.append(text[:MAX_CELL])
            self._cell = None
        elif tag == "tr" and self._row is not None and self._tables:
            table = self._tables[-1]
            if any(self._row) and len(table) < MAX_ROWS:
                table.append((self._row_header, self._row[:MAX_COLUMNS]))
            self._row = None
        elif tag == "table" and self._tables:
            table = self._tables.pop()
            self.out.extend(render_table(table))
            self.out.append("")
        elif tag in _BLOCK_TAGS and not self._tables:
            self._flush_text()

    def data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            if sum(map(len, self._cell)) < MAX_CELL * 4:  # a cell is cut anyway: keep no more
                self._cell.append(data)
        elif not self._tables:
            # a line break outside a table ends a line: the text keeps the lines it had, so
            # a paste that only mentioned <html> does not collapse into one line
            parts = data.split("\n")
            for part in parts[:-1]:
                self._text.append(part)
                self._flush_text()
            if sum(map(len, self._text)) < MAX_TEXT:
                self._text.append(parts[-1][:MAX_TEXT])

    def close(self) -> None:
        self._flush_text()


def render_table(rows: list[tuple[bool, list[str]]]) -> list[str]:
    """Header rows, a dashed ruler, data rows: the text report's layout. The first column is
    left-aligned (names), the others right-aligned (numbers) unless they hold words."""
    if not rows:
        return []
    width = max(len(cells) for _, cells in rows)
    grid = [(head, cells + [""] * (width - len(cells))) for head, cells in rows]
    widths = [max(3, *(len(cells[i]) for _, cells in grid)) for i in range(width)]
    words = [
        i > 0
        and any(cells[i] and not _RE_NUMBER.match(cells[i]) and not head for head, cells in grid)
        for i in range(width)
    ]
    out: list[str] = []
    ruled = False
    for head, cells in grid:
        if not head and not ruled:
            if out:
                out.append("  ".join("-" * w for w in widths))
            ruled = True
        parts = []
        for i, cell in enumerate(cells):
            left = i == 0 or (words[i] and not head)
            parts.append(cell.ljust(widths[i]) if left else cell.rjust(widths[i]))
        out.append("  ".join(parts).rstrip())
    return out


def html_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The text lines of an HTML document given in pieces (a file read a megabyte at a time).

    libxml2 recovers from broken markup as browsers do and takes no notice of a `<meta
    charset>` in a str (the text is already decoded). huge_tree: libxml2 releases before 2.14
    stop at 256 levels of nesting or 10 MB in one text run unless told, which would lose the
    rest of the report (2.14, in lxml 6, has no such limit: tests/test_parse_awr.py); the
    renderer bounds what is kept. A lone surrogate (JSON can carry one) cannot be handed to
    libxml2 as UTF-8: such a chunk goes with U+FFFD in its place, where the stdlib tokenizer
    kept the character."""
    renderer = _Renderer()
    parser = etree.HTMLParser(target=renderer, huge_tree=True, no_network=True)
    for chunk in chunks:
        try:
            parser.feed(chunk)
        except UnicodeEncodeError:
            parser.feed(_SURROGATE.sub("\ufffd", chunk))
        if renderer.out:
            yield from renderer.out
            renderer.out = []
    parser.close()
    yield from renderer.out


def reference_html_lines(chunks: Iterable[str]) -> Iterator[str]:
    """html_lines with the standard library's tokenizer (pure Python) in libxml2's place: the
    reference the tests compare html_lines to. Not used to analyse."""
    from html.parser import HTMLParser

    renderer = _Renderer()

    class _Tokenizer(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            renderer.start(tag)

        def handle_startendtag(self, tag: str, attrs: list) -> None:
            renderer.start(tag)
            renderer.end(tag)

        def handle_endtag(self, tag: str) -> None:
            renderer.end(tag)

        def handle_data(self, data: str) -> None:
            renderer.data(data)

    tokenizer = _Tokenizer(convert_charrefs=True)
    for chunk in chunks:
        tokenizer.feed(chunk)
        if renderer.out:
            yield from renderer.out
            renderer.out = []
    tokenizer.close()
    renderer.close()
    yield from renderer.out
