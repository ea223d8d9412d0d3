"""The C core's layout (issue 18: split by job, one header).

Why a test: the split is only worth keeping while it holds. A type or macro defined in two files can
drift apart silently (each file compiles on its own); a function a file exports without the header
declaring it is a second, hidden interface. And the folder must never be able to stand in for the
extension: a folder named ingest/_syscore/ would be imported as a namespace package when the .so is
missing, so the pure-Python fallback (syscalls.py's `except ImportError`) would never run.
"""

from __future__ import annotations

import fnmatch
import importlib.machinery
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "ingest" / "_syscore_src"
HEADER = SRC / "syscore.h"

# `} Name;` closing a typedef, `struct Name {`, `#define NAME`: what a file defines as a type/macro
_TYPEDEF_END = re.compile(r"^\}\s*(\w+)\s*;", re.M)
_STRUCT_TAG = re.compile(r"^(?:typedef\s+)?(?:struct|union|enum)\s+(\w+)\s*\{", re.M)
_MACRO = re.compile(r"^#\s*define\s+(\w+)", re.M)
# a top-level function definition or prototype (column 0, return type on the same line)
_FUNCTION = re.compile(r"^(static\s+)?(?:inline\s+)?(?:const\s+)?\w+[\s*]+(\w+)\(", re.M)
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof"}


def _c_files() -> list[Path]:
    files = sorted(SRC.glob("*.c"))
    assert files, f"no C sources under {SRC}"
    return files


def _types(text: str) -> set[str]:
    return set(_TYPEDEF_END.findall(text)) | set(_STRUCT_TAG.findall(text))


def _functions(text: str) -> list[tuple[bool, str]]:
    return [(bool(m[1]), m[2]) for m in _FUNCTION.finditer(text) if m[2] not in _KEYWORDS]


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def test_every_file_includes_the_one_header_and_no_other_local_one():
    for path in _c_files():
        local = re.findall(r'^#include\s+"([^"]+)"', path.read_text(), re.M)
        assert local == ["syscore.h"], f"{path.name} includes {local}"
    assert not list(SRC.glob("*.h"))[1:], "one header: syscore.h"


def test_no_type_or_macro_is_defined_twice():
    seen: dict[str, str] = {}
    twice = []
    for path in [HEADER, *_c_files()]:
        text = _without_comments(path.read_text())
        for name in _types(text) | set(_MACRO.findall(text)):
            if name in seen:
                twice.append((name, seen[name], path.name))
            seen[name] = path.name
    assert not twice, f"defined in two files (shared ones belong in syscore.h): {twice}"


def test_a_type_defined_in_a_c_file_is_used_only_there():
    texts = {p.name: _without_comments(p.read_text()) for p in _c_files()}
    leaked = []
    for name, text in texts.items():
        for typ in _types(text):
            users = [o for o, t in texts.items() if o != name and re.search(rf"\b{typ}\b", t)]
            if users:
                leaked.append((typ, name, users))
    assert not leaked, f"types used across files must live in syscore.h: {leaked}"
    assert {"Core", "Stat", "Proc", "Txt", "CallArgs", "SyscoreConfig"} <= _types(
        HEADER.read_text()
    )


def test_what_a_file_exports_is_declared_in_the_header_and_defined_once():
    declared = {name for static, name in _functions(HEADER.read_text()) if not static}
    defined: dict[str, list[str]] = {}
    for path in _c_files():
        for static, name in _functions(_without_comments(path.read_text())):
            if not static:
                defined.setdefault(name, []).append(path.name)
    exported = set(defined) - {"PyInit__syscore"}  # PyMODINIT_FUNC: the module's one export
    assert exported == declared, (
        f"not static but not in syscore.h: {sorted(exported - declared)}; "
        f"in syscore.h but defined nowhere: {sorted(declared - exported)}"
    )
    assert all(len(files) == 1 for files in defined.values()), defined
    assert defined["PyInit__syscore"] == ["module.c"]


def test_no_function_is_written_twice():
    # a static helper copied into a second file would compile and drift; the header's inline
    # helpers are the shared copies
    where: dict[str, set[str]] = {}
    for path in [HEADER, *_c_files()]:
        for _, name in _functions(_without_comments(path.read_text())):
            where.setdefault(name, set()).add(path.name)
    prototypes = {name for static, name in _functions(HEADER.read_text()) if not static}
    twice = {
        name: sorted(files)
        for name, files in where.items()
        if len(files - ({HEADER.name} if name in prototypes else set())) > 1
    }
    assert not twice, f"written in more than one file: {twice}"


def test_the_source_folder_cannot_stand_in_for_a_missing_extension():
    # a finder over ingest/ that knows no extension suffix: what the import system sees when the
    # .so was not built
    finder = importlib.machinery.FileFinder(
        str(ROOT / "ingest"),
        (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
    )
    assert finder.find_spec("ingest._syscore") is None
    assert not (ROOT / "ingest" / "_syscore").exists()


def test_the_header_goes_into_an_sdist():
    # setup.py names sources (always shipped) and the header as `depends` (not shipped by every
    # setuptools); a build from an sdist without it would quietly fall back to pure Python
    includes = [
        line.split()[1:]
        for line in (ROOT / "MANIFEST.in").read_text().splitlines()
        if line.startswith("include ")
    ]
    patterns = [p for words in includes for p in words]
    header = HEADER.relative_to(ROOT).as_posix()
    assert any(fnmatch.fnmatch(header, p) for p in patterns), f"MANIFEST.in: include {header}"


def test_attribute_names_are_interned_once_not_made_per_call():
    """PyObject_GetAttrString / SetAttrString / CallMethod with a C string make, hash and free
    a new str on every call: a tenth of a 10 MB tkprof or raw 10046 parse (callgrind). The
    readers name attributes through syscore.h's get_attr / set_attr / interned() instead."""
    per_call = re.compile(r"\bPyObject_(?:GetAttrString|SetAttrString|HasAttrString|CallMethod)\(")
    found = [
        f"{path.name}: {m[0]}"
        for path in [HEADER, *_c_files()]
        for m in per_call.finditer(_without_comments(path.read_text()))
    ]
    assert found == []
