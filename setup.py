"""Only the C extension lives here; everything else is in pyproject.toml.

optional=True: without a compiler the install still succeeds and the truss/strace parsers run in
pure Python (same results, slower); tests/test_syscore.py fails then, so CI notices.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ingest._syscore",
            sources=["ingest/_syscore.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-field-initializers"],
            optional=True,
        )
    ]
)
