"""perfkb benchmarks: `python -m benchmarks --quick|--full [--only NAME]` (see docs/benchmarks.md).

Every figure is measured next to a reference in the same run and reported as an absolute and a
ratio; nothing here runs in CI except the correctness checks in tests/test_benchmarks_smoke.py.
"""
