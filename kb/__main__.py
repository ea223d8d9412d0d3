"""`python -m kb` runs the perfkb command."""

from kb.cli import app

if __name__ == "__main__":
    app(prog_name="perfkb")
