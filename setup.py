"""Only the C extension lives here; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ingest._syscore",
            sources=["ingest/_syscore.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-field-initializers"],
        )
    ]
)
