"""Only the C extension lives here; everything else is in pyproject.toml.

optional=True: without a compiler the install still succeeds and the truss/strace parsers run in
pure Python (same results, slower); tests/test_syscore.py fails then, so CI notices.

The C core is one folder, a file per job and one header (ingest/_syscore_src/syscore.h says which
file does what); it is still one module, ingest._syscore. -fvisibility=hidden: the functions the
files share are extern to each other, but only PyInit__syscore leaves the .so. The folder is not
named ingest/_syscore/: without the built .so, `from ingest import _syscore` would then import that
folder as a namespace package instead of failing, and the pure-Python fallback would never run.
"""

from pathlib import Path

from setuptools import Extension, setup

CORE = Path("ingest/_syscore_src")

setup(
    ext_modules=[
        Extension(
            "ingest._syscore",
            sources=sorted(str(p) for p in CORE.glob("*.c")),
            depends=sorted(str(p) for p in CORE.glob("*.h")),
            extra_compile_args=[
                "-O2",
                "-std=c11",
                "-Wall",
                "-Wno-missing-field-initializers",
                "-fvisibility=hidden",
            ],
            optional=True,
        )
    ]
)
