"""The `perfkb` command. It renders; the store and the matcher decide.

Every command turns the errors people cause (a missing file, a bad entry, an unknown id) into
one line on stderr and a non-zero exit. Set PERFKB_DEBUG=1 to see a traceback for anything else.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.2x carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # older typer depends on click
    from click import ClickException  # type: ignore[no-redef]
import kb
from kb.plugins import register_commands

# Everything else (the store and whoosh, pydantic models and settings, the parsers, rich's
# tables and progress bars; even json, tempfile, shlex, getpass) is imported by the commands
# that use it: `perfkb --help` and `perfkb search` are typed dozens of times a day, and
# importing the whole application up front cost 10x the interpreter's own start-up (issue #19).
# tests/test_startup.py keeps it so.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from kb.models import Entry
    from kb.settings import Settings
    from kb.store import Store


def _coerce_on_first_value(command: Any, ctx: Any) -> None:
    """typer 0.2x coerces each parameter's value through a pydantic TypeAdapter it builds the
    first time the parameter is processed, even for a value that needs nothing: an option left
    out (None, `--help` too) or a plain `str` argument. Importing typer._adapters and building
    those adapters was ~35 ms CPU of every `perfkb analyze` (a sixth of its 0.2 s, issue #19).
    The command's parameters get a coercion that returns such values as they are (what the
    adapter returns for them) and builds typer's own coercion for anything else, so every other
    value (a number, a path, a choice) and every message about a bad one is typer's.

    Older typer (click converts, no pydantic) has no such step: nothing to do."""
    if _OnFirstValue is None:
        return
    help_option = command.get_help_option(ctx)  # made on first use; kept by the command
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # not typer's coercion, or one already made
        param._runtime_param = _OnFirstValue(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            descriptor=descriptor,
        )


def _on_first_value_class() -> type | None:
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return None

    @dataclasses.dataclass(frozen=True)
    class OnFirstValue(RuntimeParam):
        """See _coerce_on_first_value. (None never gets here: RuntimeParam.coerce answers it,
        for every kind of parameter.)"""

        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation, info = self.annotation, self.parameter_info
            if info.parser is None:
                if annotation is str and type(value) is str:
                    return value
                # `perfkb search`'s values (issue #19): its words, a page number and size
                if annotation is int and (
                    type(value) is int
                    or (type(value) is str and value.isascii() and value.isdigit())
                ):
                    n = int(value)
                    if (info.min is None or n >= info.min) and (info.max is None or n <= info.max):
                        return n
                if (
                    annotation == list[str]
                    and type(value) in (list, tuple)
                    and all(type(v) is str for v in value)
                ):
                    return list(value)
            real = build_runtime_param(self.descriptor)
            param._runtime_param = real
            return real._coerce_value(value, param=param, ctx=ctx)

    return OnFirstValue


_OnFirstValue = _on_first_value_class()


def _no_pydantic_plugin_scan() -> None:
    """Tell pydantic (its documented PYDANTIC_DISABLE_PLUGINS) not to look for plugins, unless
    the user set that variable themselves.

    Why: on the first model it builds, pydantic asks importlib.metadata for the `pydantic`
    entry points, which reads the metadata of every installed distribution (2.5 ms with this
    venv's 69; more in a crowded site-packages), on every `perfkb analyze` (issue #19). perfkb
    ships no pydantic plugin and none is meant to watch its validation; a user who wants one
    sets the variable (to a name list, or to an empty value) and perfkb leaves it alone. Set
    here, in perfkb's own command, not on import: a program that imports kb keeps its plugins.

    (pydantic still imports importlib.metadata: the scan is skipped, the import is not.)"""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


class _OneLineErrors(TyperGroup):
    """Usage mistakes (an unknown option, a missing argument) get one line too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _coerce_on_first_value(self, ctx)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None:
            _coerce_on_first_value(cmd, ctx)
        return name, cmd, rest

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        _no_pydantic_plugin_scan()
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # plain `perfkb`: show the help
                exc.show()
            else:
                hint = " (see perfkb --help)" if exc.exit_code == 2 else ""
                sys.stderr.write(f"perfkb: error: {_one_line(exc.format_message())}{hint}\n")
            sys.exit(exc.exit_code)
        except typer.Abort:
            sys.stderr.write("perfkb: error: interrupted\n")
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="perfkb",
    cls=_OneLineErrors,
    help="Knowledge base of Oracle and OS performance incidents: search it, add to it, and "
    "match pasted evidence (tkprof, truss, strace, mpstat, vmstat, iostat, sar, pidstat, prstat, "
    "stacks, DTrace, wait tables).",
    no_args_is_help=True,
    # Plain click help, not typer's rich panels: typer.rich_utils imports rich.markdown,
    # markdown_it, pygments and rich.traceback (~35 ms, most of what `import typer, rich` costs)
    # for boxes around the same text, on every `perfkb --help` (issue #19).
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class _LazyConsole:
    """A rich Console made on first use: building one imports most of rich (styles, themes,
    the terminal probe), which `perfkb --help` and a JSON answer never need."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    @property
    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


out = _LazyConsole(highlight=False, soft_wrap=True)
err = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)

PROGRESS_FILES = 20  # show a progress bar when importing more files than this
PROGRESS_BYTES = 5 * 1024 * 1024  # ... or analysing a file larger than this


class _State:
    data_dir: Path | None = None


state = _State()


class CliError(Exception):
    """A failure already phrased for the user."""


# -- plumbing ---------------------------------------------------------------------------------


def _one_line(message: str) -> str:
    return " ".join(str(message).split()) or "unknown error"


def _fail(message: str, code: int = 1) -> None:
    sys.stderr.write(f"perfkb: error: {_one_line(message)}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return where + (exc.strerror or str(exc))


def _loaded(*names: str) -> tuple[type[Exception], ...]:
    """The exception classes `module.Name` whose module is loaded (if it is not, nothing can have
    raised them): the store, the models, the query parser, YAML entry files are imported only by
    the commands that need them, so `perfkb --help` starts without any of them."""
    found: list[type[Exception]] = []
    for name in names:
        module_name, _, attr = name.rpartition(".")
        module = sys.modules.get(module_name)
        if module is not None:
            found.append(getattr(module, attr))
    return tuple(found)


def command(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """@app.command that turns expected failures into one line and a non-zero exit."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            try:
                return fn(*a, **kw)
            except (typer.Exit, ClickException):
                raise
            except (
                CliError,
                *_loaded(
                    "kb.store.StoreError",
                    "kb.models.EntryError",
                    "kb.search_query.QueryError",
                    "kb.entry_yaml.EntryFileError",
                ),
            ) as exc:
                _fail(str(exc))
            except _loaded("yaml.YAMLError") as exc:
                _fail(f"YAML error: {exc}")
            except UnicodeDecodeError as exc:
                _fail(f"not UTF-8 text: {exc.reason} at byte {exc.start}")
            except OSError as exc:
                _fail(_os_message(exc))
            except (KeyboardInterrupt, typer.Abort):
                _fail("interrupted", 130)
            except Exception as exc:
                if os.environ.get("PERFKB_DEBUG"):
                    raise
                _fail(
                    f"internal error: {type(exc).__name__}: {exc} "
                    "(run with PERFKB_DEBUG=1 for the traceback)"
                )

        return app.command(*args, **kwargs)(wrapper)

    return decorate


@app.callback()
def main(
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help="Where the database and index live (default: $PERFKB_DATA_DIR or ./data).",
        file_okay=False,
    ),
) -> None:
    state.data_dir = data_dir


def _settings() -> Settings:
    from kb.settings import Settings

    try:
        if state.data_dir is not None:
            return Settings(data_dir=state.data_dir)
        return Settings()
    except Exception as exc:  # pydantic ValidationError from a bad PERFKB_* variable
        raise CliError(f"bad setting: {_one_line(str(exc))}") from None


def _store() -> Store:
    from kb.store import Store

    return Store(_settings())


def _user() -> str:
    import getpass

    name = os.environ.get("PERFKB_USER")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:
            name = "cli"
    return f"{name} (cli)"


def _print_json(data: Any) -> None:
    import json

    typer.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))


# -- importing --------------------------------------------------------------------------------


def _yaml_files(path: Path) -> list[Path]:
    if not path.exists():
        raise CliError(f"{path}: no such file or directory")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise CliError(f"{path}: no .yaml files in this directory")
        return files
    return [path]


def _progress(total: float, label: str, *, bytes_: bool = False) -> Progress:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn(label), BarColumn()]
    columns += [DownloadColumn()] if bytes_ else [TextColumn("{task.completed}/{task.total}")]
    columns.append(TimeRemainingColumn())
    return Progress(*columns, console=err.real, transient=True)


def _import_files(
    store: Store,
    files: list[Path],
    *,
    keep_local_edits: bool,
    restore_deleted: bool,
    author: str,
    force: bool = False,
    conflicts: list[str] | None = None,
) -> tuple[Counter[str], list[str]]:
    """Upsert every entry of `files`; ids kept because the local version is newer (or the
    file's age unknown) go to `conflicts` when the caller asks for them."""
    from kb.entry_yaml import EntryFileError, read_entries
    from kb.store import StoreError

    counts: Counter[str] = Counter()
    problems: list[str] = []
    show = len(files) > PROGRESS_FILES
    progress = _progress(len(files), "importing") if show else None
    task = progress.add_task("import", total=len(files)) if progress else None
    with store.bulk():
        if progress:
            progress.start()
        try:
            for path in files:
                try:
                    for entry in read_entries(path):
                        _, status = store.upsert(
                            entry,
                            author=author,
                            keep_local_edits=keep_local_edits,
                            restore_deleted=restore_deleted,
                            force=force,
                        )
                        counts[status] += 1
                        if status == "conflict" and conflicts is not None:
                            conflicts.append(f"{entry.id} ({path})")
                except (EntryFileError, StoreError) as exc:
                    problems.append(_one_line(str(exc)))
                if progress and task is not None:
                    progress.advance(task)
        finally:
            if progress:
                progress.stop()
    return counts, problems


def _report_import(counts: Counter[str], problems: list[str], where: str) -> None:
    for problem in problems:
        sys.stderr.write(f"perfkb: error: {problem}\n")
    total = sum(counts.values())
    out.print(
        f"{_plural(total, 'entry', 'entries')} from {where}: {counts['created']} created, "
        f"{counts['updated']} updated, "
        f"{counts['unchanged']} unchanged, {counts['kept-newer']} kept "
        "(newer or edited here)"
        + (f", {_plural(counts['conflict'], 'conflict')}" if counts["conflict"] else "")
    )
    if problems:
        raise typer.Exit(1)


# -- commands ---------------------------------------------------------------------------------


def _package_entries() -> Path:
    return Path(kb.__file__).parent / "entries"


@command()
def init(
    entries: Path | None = typer.Option(
        None, "--entries", help="Directory of starter entries (default: the ones perfkb ships)."
    ),
) -> None:
    """Create the store and load the starter entries (safe to run again).

    An entry edited here since it was loaded, newer than its starter file, or deleted is kept.
    """
    source = entries or _package_entries()
    files = sorted(source.glob("*.yaml")) if source.is_dir() else []
    store = _store()
    with store:
        counts, problems = _import_files(
            store, files, keep_local_edits=True, restore_deleted=False, author="perfkb init"
        )
        n = store.count()
        out.print(f"store ready in {store.settings.data_dir} ({_plural(n, 'entry', 'entries')})")
    _report_import(counts, problems, str(source))


@command()
def search(
    query: list[str] | None = typer.Argument(
        None, help="Free text plus filters: platform:solaris source:truss version:12.2 tag:numa"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    page: int = typer.Option(1, "--page", min=1),
    per_page: int = typer.Option(10, "--per-page", min=1, max=100),
) -> None:
    """Search the knowledge base."""
    text = " ".join(query or [])
    result: Any = _search_file(text, page, per_page)
    if result is None:
        with _store() as store:
            result = store.search(text, page=page, per_page=per_page)
    if as_json:
        if hasattr(result, "model_dump"):
            _print_json(result.model_dump(mode="json"))
        else:
            import dataclasses

            _print_json(dataclasses.asdict(result))
        return
    if not result.results:
        what = f"for '{text}'" if text else ""
        more = f" (there are {result.total}; try a lower --page)" if result.total else ""
        out.print(f"no entries {what}{more}".replace("  ", " "))
        return
    first = (page - 1) * per_page + 1
    last = first + len(result.results) - 1
    about = f" for {text!r}" if text else ""
    total = _plural(result.total, "entry", "entries")
    lines: list[list[tuple[str, str]]] = [[(f"{total}{about}, showing {first}-{last}", "bold")]]
    for n, hit in enumerate(result.results, first):
        head = [(f"\n{n}. ", ""), (hit.id, "bold cyan")]
        if text:
            head.append((f"  score {hit.score:.2f}", "dim"))
        head.append(("  " + ", ".join(hit.platforms + hit.sources), "dim"))
        lines.append(head)
        lines.append([("   " + hit.title, "")])
        lines.append(
            [("   ", "")] + [(p.text, "bold yellow" if p.hit else "") for p in hit.snippet]
        )
    _print_styled(lines)


def _print_styled(lines: list[list[tuple[str, str]]]) -> None:
    """Print each line, made of (text, rich style) pieces, as rich prints a Text of them (never
    markup). When stdout is not a terminal rich prints the bare text, and for text of printable
    characters without trailing blanks that is the pieces joined: written so, without
    rich.console (~20 ms of `perfkb search`'s start, issue #19); anything else goes through
    rich (tests/test_cli_search_output.py compares the two)."""
    plain = ["".join(piece for piece, _ in line) for line in lines]
    if _plain_stdout() and all(_plain_safe(text) for text in plain):
        sys.stdout.write("".join(text + "\n" for text in plain))
        sys.stdout.flush()
        return
    from rich.text import Text

    for line in lines:
        styled = Text()
        for piece, style in line:
            styled.append(piece, style=style)
        out.print(styled)


def _plain_stdout() -> bool:
    """Would rich print to stdout without colours (not a terminal, nothing forcing one)?"""
    forced = (
        "FORCE_COLOR",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "JUPYTER_COLUMNS",
        "JUPYTER_LINES",
    )
    if any(os.environ.get(name) for name in forced):
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _plain_safe(text: str) -> bool:
    """Text rich prints as it is: printable characters only (no tab it would expand, no control
    code it would strip), no blank at a line's end (it trims those past the width)."""
    return all(line.isprintable() and not line.endswith(" ") for line in text.split("\n"))


def _search_file(text: str, page: int, per_page: int) -> Any:
    """The page the store would give, read from the search file the index keeps beside it
    (kb/search_file.py) without opening the store: no pydantic settings, no whoosh. None when
    the store must answer (no KB yet, the file behind the database, a query the file does not
    answer, PERFKB_SEARCH_* limits set: the store reads them through Settings)."""
    from kb.search_file import search_data_dir
    from kb.search_query import parse_query

    names = [k for k in os.environ if k.upper().startswith("PERFKB_")]
    if any(k.upper().startswith("PERFKB_SEARCH_") for k in names):
        return None
    data_dir = state.data_dir
    if data_dir is None:
        given = [os.environ[k] for k in names if k.upper() == "PERFKB_DATA_DIR"]
        if len(given) > 1:
            return None
        data_dir = Path(given[0]) if given else Path("./data")
    return search_data_dir(data_dir, parse_query(text), page=page, per_page=per_page)


def _describe(cond: Any, depth: int = 0) -> list[str]:
    pad = "  " * depth
    if not cond.children:
        return [pad + "- " + cond.describe()]
    word = {"all": "all of", "any": "any of", "not": "not"}[cond.kind]
    return [pad + word + ":"] + [ln for c in cond.children for ln in _describe(c, depth + 1)]


def _render_entry(entry: Entry) -> None:
    from rich.table import Table
    from rich.text import Text

    # the id and title whole, on their own lines: a Panel clipped long titles on narrow terminals
    _plain(entry.id, "dim")
    _plain(entry.title, "bold")
    out.print()
    for label, value in (("Symptom", entry.symptom), ("Root cause", entry.root_cause)):
        out.print(Text(label, style="bold underline"))
        out.print(Text(value), "")
    out.print(Text("Fix", style="bold underline"))
    out.print(Text(entry.fix), "")
    if entry.differential:
        out.print(Text("Look-alikes", style="bold underline"))
        for d in entry.differential:
            out.print(Text(f"- {d.entry}: {d.check}"))
        out.print("")
    facts = Table.grid(padding=(0, 2))
    facts.add_row("platforms", ", ".join(entry.platforms))
    facts.add_row("versions", "; ".join(r.describe() for r in entry.affected_versions) or "-")
    facts.add_row("tags", ", ".join(entry.tags) or "-")
    facts.add_row("author", entry.author)
    facts.add_row(
        "created / updated", f"{entry.created:%Y-%m-%d %H:%M} / {entry.updated:%Y-%m-%d %H:%M}"
    )
    out.print(facts)
    if entry.references:
        out.print(Text("\nReferences", style="bold underline"))
        for ref in entry.references:
            out.print(Text(ref))
    if entry.next_commands:
        out.print(Text("\nNext commands", style="bold underline"))
        for c in entry.next_commands:
            _plain(
                f"{_PLATFORM_LABEL.get(c.platform, c.platform)}: # {c.why_with_caveats()}", "dim"
            )
            for line in c.command.splitlines():
                _plain(line)
    for sig in entry.signatures:
        head = f"signature {sig.name} (weight {sig.weight:g}, sources {', '.join(sig.sources)}"
        head += ")" if sig.specific else ", generic)"
        out.print(Text("\n" + head, style="bold"))
        if sig.description:
            out.print(Text(sig.description, style="dim"))
        out.print(Text("\n".join(_describe(sig.when))))


@command()
def show(
    entry_id: str = typer.Argument(..., metavar="ID"),
    as_json: bool = typer.Option(False, "--json", help="Print the entry as JSON."),
    as_yaml: bool = typer.Option(False, "--yaml", help="Print the entry as YAML."),
) -> None:
    """Show one entry."""
    with _store() as store:
        entry = store.get(entry_id)
    if as_json:
        _print_json(entry.model_dump(mode="json", by_alias=True))
    elif as_yaml:
        from kb.entry_yaml import dump_entry

        typer.echo(dump_entry(entry), nl=False)
    else:
        _render_entry(entry)


@command()
def add(
    file: Path = typer.Argument(..., metavar="FILE.yaml", help="One or more entries in YAML."),
) -> None:
    """Add new entries from a YAML file.

    An id that already exists is an error: use `perfkb edit` or `perfkb import`.
    """
    from kb.entry_yaml import read_entries

    entries = read_entries(file)
    with _store() as store, store.bulk():
        for entry in entries:
            store.add(entry, author=_user())
            out.print(f"added {entry.id}")


def _editor() -> list[str]:
    import shlex

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        return shlex.split(editor)
    except ValueError as exc:
        raise CliError(f"cannot parse $EDITOR '{editor}': {exc}") from None


@command()
def edit(entry_id: str = typer.Argument(..., metavar="ID")) -> None:
    """Edit an entry in $EDITOR as YAML; it is validated before it is saved."""
    import tempfile

    from kb.entry_yaml import EntryFileError, dump_entry, load_entry
    from kb.store import EntryNotFound, StoreError

    with _store() as store:
        entry = store.get(entry_id)
        rev = store.current_rev(entry_id)
        original = dump_entry(entry)
        fd, name = tempfile.mkstemp(prefix=f"perfkb-{entry_id}-", suffix=".yaml")
        path = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(original)
        editor = _editor()
        while True:
            try:
                code = subprocess.run([*editor, str(path)], check=False).returncode
            except OSError as exc:
                raise CliError(
                    f"cannot run editor '{editor[0]}' ({exc.strerror}); set $EDITOR. "
                    f"The entry is in {path}"
                ) from None
            if code != 0:
                raise CliError(
                    f"the editor exited with status {code}; nothing saved, text kept in {path}"
                )
            text = path.read_text(encoding="utf-8", errors="replace")
            if text == original:
                path.unlink(missing_ok=True)
                out.print("no changes")
                return
            try:
                new = load_entry(text, source=str(path))
                if new.id != entry_id:
                    raise EntryFileError(
                        f"{path}: the id cannot change ('{entry_id}' became '{new.id}'); "
                        "to make a new entry save a copy and run perfkb add"
                    )
                saved = store.update(new, author=_user(), expected_rev=rev)
            except (EntryFileError, EntryNotFound) as exc:
                sys.stderr.write(f"perfkb: error: {_one_line(str(exc))}\n")
                if isinstance(exc, EntryFileError) and _confirm("Edit again?"):
                    continue
                raise CliError(f"not saved; your edit is kept in {path}") from None
            except StoreError as exc:
                raise CliError(f"{exc}; not saved, your edit is kept in {path}") from None
            break
        path.unlink(missing_ok=True)
        history = store.history(entry_id)
        changed = ", ".join(history[-1].changed_fields) if history else ""
        out.print(f"saved {saved.id} (revision {store.current_rev(entry_id)}: {changed})")


def _confirm(question: str) -> bool:
    try:
        return typer.confirm(question, default=True, err=True)
    except typer.Abort:
        return False


@command(name="import")
def import_(
    path: Path = typer.Argument(..., help="A YAML file or a directory of them."),
    force: bool = typer.Option(
        False, "--force", help="Overwrite local versions that are newer (they stay in history)."
    ),
) -> None:
    """Import entries from a YAML file or a directory of them.

    A file whose `updated` is newer replaces the stored entry; a deleted one comes back. A
    stored entry that is as new or newer, or compared with a file without `updated`, is kept
    and reported as a conflict (--force overwrites it). `created` is never reset.
    """
    files = _yaml_files(path)
    conflicts: list[str] = []
    with _store() as store:
        counts, problems = _import_files(
            store,
            files,
            keep_local_edits=False,
            restore_deleted=True,
            author=_user(),
            force=force,
            conflicts=conflicts,
        )
    for conflict in conflicts:
        sys.stderr.write(
            f"perfkb: conflict: {_one_line(conflict)}: the local version is newer or the file "
            "gives no `updated`; kept the local one (--force overwrites)\n"
        )
    _report_import(counts, problems, str(path))


@command()
def export(directory: Path = typer.Argument(..., metavar="DIR")) -> None:
    """Write every entry to DIR/<id>.yaml."""
    if directory.exists() and not directory.is_dir():
        raise CliError(f"{directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    with _store() as store:
        entries = store.list_entries()
    from kb.entry_yaml import entry_filename, write_entry

    # refuse before writing anything (write_entry checks each target again as it writes)
    links = [p for e in entries if (p := directory / entry_filename(e.id)).is_symlink()]
    if links:
        raise CliError(
            f"{links[0]}: is a symbolic link ({len(links)} target(s) in {directory} are); "
            "perfkb export does not write through links: remove them or export elsewhere"
        )
    for entry in entries:
        write_entry(entry, directory)
    out.print(f"exported {_plural(len(entries), 'entry', 'entries')} to {directory}")


@command()
def reindex() -> None:
    """Rebuild the search index from the database."""
    started = time.perf_counter()
    with _store() as store:
        count = store.reindex()
    out.print(
        f"indexed {_plural(count, 'entry', 'entries')} in {time.perf_counter() - started:.2f} s"
    )


@command()
def history(
    entry_id: str = typer.Argument(..., metavar="ID"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every revision of an entry, oldest first (deleted entries too)."""
    with _store() as store:
        revisions = store.history(entry_id)
    if as_json:
        _print_json([r.model_dump(mode="json", exclude={"entry"}) for r in revisions])
        return
    from rich.table import Table

    table = Table(title=f"history of {entry_id}")
    for col in ("rev", "when (UTC)", "who", "action", "changed"):
        table.add_column(col)
    for r in revisions:
        table.add_row(
            str(r.rev),
            f"{r.at:%Y-%m-%d %H:%M:%S}",
            r.author,
            r.action,
            ", ".join(r.changed_fields),
        )
    out.print(table)


@command()
def delete(entry_id: str = typer.Argument(..., metavar="ID")) -> None:
    """Delete an entry (soft: history stays, `perfkb restore` brings it back).

    Works on an entry stored but no longer readable too (`perfkb check` lists those)."""
    with _store() as store:
        store.delete(entry_id, author=_user())
    out.print(f"deleted {entry_id} (perfkb restore {entry_id} brings it back)")


def _is_backup_target(target: str) -> bool:
    """`perfkb restore` takes an entry id or a backup file: ids are slugs, so anything else is
    a path, and a slug naming an SQLite file here is a backup too."""
    from kb.backup import SQLITE_HEADER
    from kb.models import SLUG

    if not re.fullmatch(SLUG, target):
        return True
    path = Path(target)
    try:
        with path.open("rb") as fh:
            return path.is_file() and fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


@command()
def restore(
    target: str = typer.Argument(..., metavar="ID|BACKUP", help="An entry id or a backup file."),
) -> None:
    """Bring back a deleted entry, or the whole KB from a `perfkb backup` file.

    A backup is checked first (integrity, schema version, every entry valid); the KB it
    replaces is kept in DATA_DIR/backups/ and the search index is rebuilt.
    """
    if not _is_backup_target(target):
        with _store() as store:
            store.restore(target, author=_user())
        out.print(f"restored {target}")
        return
    from kb.backup import inspect_backup

    inspect_backup(Path(target))  # refuse a bad file before touching anything
    settings = _settings()
    with _store() as store:
        keep_dir = settings.data_dir / "backups"
        keep_dir.mkdir(exist_ok=True)
        kept = keep_dir / f"before-restore-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.sqlite3"
        store.backup(kept)
        info = store.restore_backup(Path(target))
        report = store.check(repair=True)
    out.print(
        f"restored {_plural(info.entries, 'entry', 'entries')} "
        f"({_plural(info.revisions, 'revision')}) from {target}; "
        f"index rebuilt ({_plural(report.indexed, 'document')}). The KB it replaced is in {kept}"
    )


@command()
def backup(
    file: Path = typer.Argument(..., metavar="FILE", help="Where to write the backup."),
    force: bool = typer.Option(False, "--force", help="Replace FILE if it exists."),
) -> None:
    """Write a consistent copy of the database to FILE, online (others may keep writing).

    The search index is not copied: it is rebuilt from the database on restore.
    """
    settings = _settings()
    if not settings.db_path.is_file():
        raise CliError(f"no knowledge base in {settings.data_dir} (run perfkb init first)")
    started = time.perf_counter()
    with _store() as store:
        info = store.backup(file, overwrite=force)
    out.print(
        f"backed up {_plural(info.entries, 'entry', 'entries')} "
        f"({_plural(info.revisions, 'revision')}, "
        f"{info.size_bytes / 1048576:.1f} MB) to {file} in {time.perf_counter() - started:.2f} s"
    )
    if info.unreadable:
        ids = ", ".join(info.unreadable[:20]) + (" …" if len(info.unreadable) > 20 else "")
        err.print(
            f"warning: unreadable entries copied as they are: {ids} (restore refuses this file "
            "until `perfkb check --repair` has quarantined them and a new backup is made)",
            markup=False,
        )


@command()
def check(
    no_repair: bool = typer.Option(False, "--no-repair", help="Only report."),
    repair: bool = typer.Option(
        True, "--repair", help="Repair (the default): rebuild the index, quarantine bad entries."
    ),
    as_json: bool = typer.Option(False, "--json"),
    kb_rules: bool = typer.Option(
        False, "--kb", help="Check the entry files instead: fixtures, SQL, preconditions."
    ),
    entries_dir: Path | None = typer.Option(
        None, "--entries", help="With --kb: the entry files (default: the starter entries)."
    ),
    fixtures_dir: Path | None = typer.Option(
        None, "--fixtures", help="With --kb: tests/fixtures/kb of a checkout (default: beside kb)."
    ),
) -> None:
    """Check the database's integrity and that the search index agrees with it; repair the index.

    Entries stored but no longer readable are listed by id; repairing quarantines them (a
    soft delete by 'perfkb check --repair', their data kept in the row and its history).
    With --kb, check the knowledge base's entry files against the rules in kb/kbcheck.py."""
    if kb_rules:
        _check_kb(entries_dir, fixtures_dir, as_json)
        return
    with _store() as store:
        report = store.check(repair=repair and not no_repair)
    if as_json:
        _print_json(report.model_dump() | {"ok": report.ok})
    else:
        out.print(
            f"database: {_plural(report.entries, 'entry', 'entries')}; "
            f"index: {_plural(report.indexed, 'document')}"
        )
        if report.database != "ok":
            out.print(f"database integrity: {report.database} (restore it from a backup)")
        if report.index_problem:
            out.print(f"the index could not be read: {report.index_problem}")
        for entry_id, problem in report.unreadable.items():
            moved = entry_id in report.quarantined
            out.print(
                f"unreadable entry {entry_id}: {problem} "
                + (
                    "(quarantined: deleted, its data kept in its history)"
                    if moved
                    else f"(perfkb delete {entry_id} or perfkb check --repair)"
                ),
                markup=False,
            )
        for label, ids in (
            ("missing", report.missing),
            ("extra", report.extra),
            ("stale", report.stale),
        ):
            if ids:
                out.print(
                    f"{label} in the index: {', '.join(ids[:20])}" + (" …" if len(ids) > 20 else "")
                )
        out.print(
            "consistent"
            if report.ok
            else ("repaired (index rebuilt)" if report.repaired else "NOT consistent")
        )
    if report.database != "ok" or (not report.ok and not report.repaired):
        raise typer.Exit(1)


def _check_kb(entries_dir: Path | None, fixtures_dir: Path | None, as_json: bool) -> None:
    """perfkb check --kb: exit 1 when an entry breaks a rule (a CI gate on the entry files)."""
    from kb.entry_yaml import read_entries
    from kb.kbcheck import check_kb

    here = Path(__file__).resolve().parent
    entries_dir = entries_dir or here / "entries"
    if fixtures_dir is None:
        beside = here.parent / "tests" / "fixtures" / "kb"
        fixtures_dir = beside if beside.is_dir() else None
    entries = []
    for path in sorted(entries_dir.glob("*.yaml")):
        entries += read_entries(path)
    problems = check_kb(entries, fixtures_dir)
    if as_json:
        _print_json(
            {
                "entries": len(entries),
                "fixtures": str(fixtures_dir) if fixtures_dir else None,
                "problems": [p.model_dump() for p in problems],
                "ok": not problems,
            }
        )
    else:
        for p in problems:
            out.print(p.line(), markup=False)
        where = f"fixtures in {fixtures_dir}" if fixtures_dir else "no fixture directory found"
        out.print(f"{len(entries)} entries, {len(problems)} problems ({where})", markup=False)
    if problems:
        raise typer.Exit(1)


# -- analyze ----------------------------------------------------------------------------------


# facts listed first when present: an AWR report's top events and load profile, ASH's events
_LEAD_FACTS = ("event.pct_of_db_time", "load.per_s", "report.db_time_s", "ash.seconds")


def _fact_summary(
    facts: dict[str, Any], limit: int = 5, first: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """One row per fact, the lead facts first (an AWR report's top events, `_LEAD_FACTS`; an OS
    sampler's headline, `first`: ingest.facts.HEADLINE of the format, whose numbers also carry
    their unit)."""
    from ingest.facts import FACTS

    rows: list[tuple[str, str]] = []
    lead = [n for n in (*_LEAD_FACTS, *first) if n in facts]
    names = lead + [n for n in facts if n not in lead]
    for name in names:
        value = facts[name]
        unit = FACTS[name].unit if first and name in FACTS else ""
        if isinstance(value, dict):
            top = sorted(value.items(), key=lambda kv: -float(kv[1]))[:limit]
            shown = ", ".join(f"{k}={_num(v)}" for k, v in top)
            more = f" (+{len(value) - limit} more)" if len(value) > limit else ""
            rows.append((name, shown + more + (f"  [{unit}]" if unit else "")))
        else:
            text = _num(value)
            rows.append((name, text + (f" {unit}" if unit and not isinstance(value, str) else "")))
    return rows


def _num(value: Any) -> str:
    from ingest.facts import number

    return number(value) if isinstance(value, int | float) else str(value)


def _render_profile(details: dict[str, Any]) -> None:
    """A raw 10046 trace's response-time profile, the table a Method R profiler prints."""
    rows = details.get("profile") or []
    if not rows:
        return
    from rich.table import Table
    from rich.text import Text

    r = details.get("response_time_s")
    table = Table(title=f"Response-time profile (R = {_num(r)} s)", title_justify="left")
    for col in ("component", "seconds", "% of R", "calls", "avg ms", "max ms"):
        table.add_column(col, justify="left" if col == "component" else "right")
    for row in rows[:15]:
        name = str(row.get("component"))
        if row.get("idle"):
            name += " (think time)"
        table.add_row(
            Text(name),
            _num(row.get("seconds")),
            _num(row.get("pct_of_r")),
            "" if row.get("calls") is None else _num(row.get("calls")),
            "" if row.get("avg_ms") is None else _num(row.get("avg_ms")),
            "" if row.get("max_ms") is None else _num(row.get("max_ms")),
        )
    out.print(table)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    if type(n) is int:  # what ingest.facts.number prints for a count, without its pydantic
        shown = f"{n:,}"
    else:
        from ingest.facts import number

        shown = number(n)
    return f"{shown} {word if n == 1 else (plural or word + 's')}"


def _plain(text: str, style: str | None = None) -> None:
    """One line printed as it is: never wrapped, cut with an ellipsis or read as markup, so a
    command can be copied whole whatever the terminal width."""
    from rich.text import Text

    out.print(Text(text, style=style or ""), soft_wrap=True, overflow="ignore", crop=False)


_PLATFORM_LABEL = {"any": "Oracle (any platform)", "solaris": "Solaris", "linux": "Linux"}


def _render_result(result: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from ingest.facts import HEADLINE
    from ingest.model import FORMATS

    if not result.blocks:
        _plain(
            "No evidence perfkb can read was found in this input (it reads: "
            + ", ".join(f for f in FORMATS if f != "unknown")
            + ")."
        )
    if result.findings:
        out.print(Text("What the evidence says", style="bold"))
        for f in result.findings:
            _plain("- " + f.text)
        out.print()
    for n, block in enumerate(result.blocks, 1):
        if not block.facts:
            continue
        title = f"block {n}: {block.format}"
        if block.platform:
            title += f" ({block.platform})"
        title += f", lines {block.start_line}-{block.end_line}"
        if block.malformed_lines:
            title += f", {_plural(block.malformed_lines, 'line')} not understood"
        if block.facts.get("os.since_boot") == 1:
            title += ", counters since boot (totals, not rates)"
        table = Table(title=title, title_justify="left", show_header=False)
        table.add_column("fact", style="cyan", overflow="fold")
        table.add_column("value", overflow="fold")
        for name, value in _fact_summary(block.facts, first=HEADLINE.get(block.format, ())):
            table.add_row(name, Text(value))
        out.print(table)
        if block.format == "trace10046":
            _render_profile(block.details)
    shown = [m for m in result.matches if not m.related_only]
    related = [m for m in result.matches if m.related_only]
    if shown:
        out.print(Text("\nMatches", style="bold"))
        for n, m in enumerate(shown, 1):
            line = Text(f"{n}. ")
            line.append(m.id, style="bold cyan")
            line.append(f"  {m.confidence} confidence, score {m.score:.2f}")
            out.print(line)
            _plain("   " + m.title)
            if m.reason:
                _plain("   why " + m.reason)
            for why in m.evidence + m.versions:
                _plain("   - " + why, "dim")
            for miss in m.near_misses:
                _plain("   - " + miss, "dim")
    if not shown:
        _plain("No known incident matches this evidence.")
    if related:
        words = [f"{m.id} ({', '.join(m.mentions)})" if m.mentions else m.id for m in related]
        _plain("also mentions: " + "; ".join(words), "dim")
    if result.next_commands:
        out.print(Text("\nNext commands", style="bold"))
        order = ["any", "solaris", "linux"]
        platforms = sorted(
            {c.platform for c in result.next_commands},
            key=lambda p: order.index(p) if p in order else len(order),
        )
        for plat in platforms:
            _plain(f"{_PLATFORM_LABEL.get(plat, plat)}:", "bold")
            for c in (c for c in result.next_commands if c.platform == plat):
                _plain("# " + c.why, "dim")
                for line in c.command.splitlines():
                    _plain(line)
            out.print()


def _refuse_binary(name: str, head: bytes) -> None:
    from ingest.detect import NOT_TEXT, binary_reason

    reason = binary_reason(head)
    if reason:
        raise CliError(f"{name}: not a text capture: {reason}. {NOT_TEXT}")


def _ensure_starter_kb(store: Store) -> None:
    """A brand-new data dir: analysing against an empty KB would match nothing."""
    if store.data_version() != 0:
        return
    files = sorted(_package_entries().glob("*.yaml"))
    _import_files(store, files, keep_local_edits=True, restore_deleted=False, author="perfkb init")
    err.print(f"new knowledge base in {store.settings.data_dir}: loaded the starter entries")


@command()
def analyze(
    file: str = typer.Argument(..., metavar="FILE|-", help="A capture or paste; - reads stdin."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis as one JSON object."),
) -> None:
    """Find evidence blocks in a file, parse them and match them against the knowledge base."""
    # This process analyses once and exits: what it imports now (pydantic's schemas and models,
    # the parsers' tables, the matcher) lives until then, so the cyclic GC need not walk it,
    # neither while it is being made (collections off during the imports) nor afterwards
    # (frozen). Measured 2026-11-25 on a seed snippet: the freeze took 44 ms CPU off against
    # the starter KB (0.31 -> 0.27 s), 50 ms at 50,000 entries. What the analysis makes later
    # (a 1 GB capture's objects) is still collected as before.
    was_on = gc.isenabled()
    gc.disable()
    try:
        from kb.analysis import analyze_evidence
    except ImportError as exc:
        raise CliError(f"the matcher is not available in this build ({exc})") from None
    finally:
        gc.freeze()
        if was_on:
            gc.enable()
    from ingest.detect import BINARY_SAMPLE, parse_stream

    if file != "-":
        if Path(file).is_dir():
            raise CliError(f"{file}: is a directory, not a file")
        if not Path(file).exists():
            raise CliError(f"{file}: no such file")

    def analyzed(raw: Any, advance: Callable[[int], None] | None) -> Any:
        # what kb.analysis.analyze_lines does, reading blocks of lines instead of single lines
        started = time.perf_counter()
        result = analyze_evidence(parse_stream(raw, advance), store)
        result.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
        return result

    with _store() as store:
        if file == "-":
            peek = getattr(sys.stdin.buffer, "peek", None)
            _refuse_binary("standard input", peek(BINARY_SAMPLE) if peek else b"")
            _ensure_starter_kb(store)
            result = analyzed(sys.stdin.buffer, None)
        else:
            path = Path(file)
            size = path.stat().st_size
            with path.open("rb") as fh:
                _refuse_binary(str(path), fh.read(BINARY_SAMPLE))
                fh.seek(0)
                _ensure_starter_kb(store)
                if size > PROGRESS_BYTES:
                    with _progress(size, f"reading {path.name}", bytes_=True) as progress:
                        task = progress.add_task("read", total=size)
                        result = analyzed(fh, lambda n: progress.advance(task, n))
                else:
                    result = analyzed(fh, None)
    if as_json:
        typer.echo(result.model_dump_json())
    else:
        _render_result(result)


# -- servers ----------------------------------------------------------------------------------


@command()
def serve(
    host: str | None = typer.Option(None, "--host", help="Default: $PERFKB_HOST or 127.0.0.1."),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Default: $PERFKB_PORT or 8000."
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, max=64, help="Server processes. Default: $PERFKB_WORKERS or 1."
    ),
) -> None:
    """Run the web page, the JSON API and (with Slack settings) the Slack HTTP endpoint.

    Worker processes share the data dir safely (SQLite, the index lock, the Slack event log),
    each with its own interpreter: one per CPU lets page views use every core."""
    if importlib.util.find_spec("kb.web.app") is None:
        raise CliError("the web app (kb.web) is not available in this build")
    import uvicorn

    from kb.settings import get_settings, usable_cpus
    from kb.store import Store

    settings = _settings()
    with Store(settings) as store:  # create the store and a fresh index before serving
        store.open_index()
    # uvicorn calls the factory without arguments: it reads the data dir from the environment
    os.environ["PERFKB_DATA_DIR"] = str(settings.data_dir)
    # a long-lived process: build the matcher at start and keep it out of the cyclic GC
    os.environ["PERFKB_WARM_START"] = "1"
    # and analyses in a pool of processes, one per usable CPU (kb/web/pool.py), unless set
    os.environ.setdefault("PERFKB_ANALYSIS_PROCESSES", str(usable_cpus()))
    get_settings.cache_clear()
    uvicorn.run(
        "kb.web.app:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        log_level=settings.log_level.lower(),
        workers=workers or settings.workers,
        # uvicorn's protocol with a cap on request heads (431); h11 would answer 400 at its own
        # limit, so that is set past ours
        http="kb.web.server:HTTP_PROTOCOL",
        h11_max_incomplete_event_size=settings.max_header_bytes + 1024,
    )


# -- plugins (the Slack bot's `perfkb bot`) ---------------------------------------------------

register_commands(app, command)
