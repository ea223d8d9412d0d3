"""Oracle initialisation parameters as people paste them: SQL*Plus / SQLcl `show parameter`

    SQL> show parameter disk_asynch_io

    NAME                                 TYPE        VALUE
    ------------------------------------ ----------- ------------------------------
    disk_asynch_io                       boolean     FALSE

and pfile lines (`create pfile from spfile`, `strings spfileORCL.ora`): `*.disk_asynch_io=FALSE`,
`ORCL1.filesystemio_options='none'`.

A parameter is a precondition, not a symptom: a setting a healthy system can have too. So the
facts say what the settings are (`param.async_io_off` when asynchronous I/O is off: disk_asynch_io
FALSE, or filesystemio_options none or directIO, which on file systems means synchronous
writes), and signatures pair them with a symptom from another block (the syscalls of DBWR, the
write waits of a report). Numeric parameters are kept in `param.number` (db_writer_processes,
dbwr_io_slaves, ...). A long VALUE that SQL*Plus wraps goes on under the VALUE column: lines
of one word after a row continue its value. filesystemio_options does not apply to ASM or raw
devices: the fact says what the parameter says, the entry says what it means.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_LINE = 1024
MAX_PARAMS = 2000
_HEADER = re.compile(r"^\s*NAME\s+TYPE\s+VALUE\s*$")
_RULER = re.compile(r"^\s*-{3,}(?:\s+-{3,}){1,2}\s*$")
_ROW = re.compile(
    r"^\s*(?P<name>_{0,2}[a-z][a-z0-9_$#]{1,80})\s+"
    r"(?P<type>boolean|string|integer|big integer|number|file|unknown)\b\s*(?P<value>.*?)\s*$"
)
_PFILE = re.compile(
    r"^\s*(?P<sid>\*|[A-Za-z][\w$#-]{0,30})\.(?P<name>_{0,2}[a-z][a-z0-9_$#]{1,80})\s*=\s*"
    r"(?P<value>.*?)\s*$"
)
_SHOW = re.compile(r"^\s*(?:SQL>\s*)?show\s+param(?:eters?)?\b", re.IGNORECASE)
_ROWISH = re.compile(r"^\s*_{0,2}[a-z][a-z0-9_$#]{1,80}\s{2,}\S")
_WORD = re.compile(r"^\s*\S{1,400}\s*$")
# filesystemio_options values with asynchronous I/O on files (none/directio: synchronous)
_ASYNC_FS = frozenset({"asynch", "setall"})


class OraParamParser(Parser):
    format: ClassVar[Format] = "oraparam"

    def __init__(self) -> None:
        super().__init__()
        self.params: dict[str, str] = {}
        self.types: dict[str, str] = {}
        self.header = False
        self.last: str | None = None  # the row a wrapped VALUE continues

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        if "NAME" in line:
            return 2 if _HEADER.match(unpaste(line, prompts=True)) else 0
        if "show" in line or "SHOW" in line:
            return 1 if _SHOW.match(unpaste(line)) else 0
        if "*." in line and "=" in line:
            m = _PFILE.match(unpaste(line))
            return 2 if m is not None and m["sid"] == "*" else 0
        return 0

    def _set(self, name: str, value: str, kind: str = "") -> None:
        if name not in self.params and len(self.params) >= MAX_PARAMS:
            return
        self.params[name] = value.strip().strip("'\"")
        if kind:
            self.types[name] = kind
        self.last = name

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line, prompts=True)
        if not text.strip():
            self.last = None
            return bool(self.lines)
        if _HEADER.match(text):
            self.header = True
            return True
        bare = unpaste(line)
        if _SHOW.match(bare):
            self.header, self.last = False, None
            return True
        if text != bare and self.lines:
            return False  # another command at a shell prompt: what follows is its output
        if self.header and _RULER.match(text):
            return True
        if (m := _PFILE.match(text)) is not None and (m["sid"] == "*" or self.params):
            self._set(m["name"], m["value"])
            return True
        if self.header and (m := _ROW.match(text)) is not None:
            self._set(m["name"], m["value"], m["type"])
            return True
        if self.header and self.last is not None and _WORD.match(text):
            self.params[self.last] += text.strip()  # SQL*Plus wrapped the VALUE column
            return True
        if self.header and _ROWISH.match(text):
            self.malformed += 1  # a row of the listing we cannot read (an unknown TYPE)
            return True
        return False

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if not self.params:
            return {}, {}, [], None
        facts: dict = {}
        disk = self.params.get("disk_asynch_io", "").upper()
        fsio = self.params.get("filesystemio_options", "").lower()
        if disk in ("TRUE", "FALSE"):
            facts["param.disk_asynch_io"] = 1.0 if disk == "TRUE" else 0.0
        if fsio:
            facts["param.filesystemio_async"] = 1.0 if fsio in _ASYNC_FS else 0.0
        if disk or fsio:
            off = disk == "FALSE" or (bool(fsio) and fsio not in _ASYNC_FS)
            facts["param.async_io_off"] = 1.0 if off else 0.0
        numbers = {}
        for name, value in self.params.items():
            if self.types.get(name, "integer") in ("integer", "big integer", "number"):
                v = number(value)
                if v is not None:
                    numbers[name] = v
        if numbers:
            facts["param.number"] = numbers
        details = {"parameters": dict(self.params)}
        return facts, details, sorted(self.params)[:200], None
