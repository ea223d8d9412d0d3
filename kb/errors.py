"""Every error kb raises for something a person did or can fix, in one module (as pySigma keeps its
exceptions). str(e) is one line a person can act on; the CLI, the web app and the bot turn these
into a message, a 4xx answer or a reply, and only these.

Why one module: the renderers catch them by name, and kb/backup.py needed StoreError from
kb/store.py while kb/store.py calls kb/backup.py, an import cycle that this module breaks.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base of store errors; str(e) is one line a person can act on."""


class EntryNotFound(StoreError):
    pass


class EntryExists(StoreError):
    pass


class BadQuery(StoreError):
    pass


class BackupError(StoreError):
    """A backup could not be written or is not fit to restore; str(e) says why, in one line."""


class MigrationError(RuntimeError):
    pass


class IndexUnavailable(Exception):
    """The index cannot be opened or written (missing, corrupt, locked too long)."""


class EntryError(ValueError):
    """A validation failure, phrased for people: entry, field, what is wrong."""

    def __init__(self, entry_id: str, problems: list[tuple[str, str]]) -> None:
        self.entry_id = entry_id
        self.problems = problems  # (field path, message)
        lines = [f"{path}: {msg}" if path else msg for path, msg in problems]
        super().__init__(f"entry '{entry_id}': " + "; ".join(lines))


class EntryFileError(ValueError):
    """A problem with an entry file, as one line: file, entry, field, what is wrong."""


class QueryError(ValueError):
    """A filter the user wrote that cannot mean anything; the message says what to write."""


class InvalidVersion(ValueError):
    pass


class UnsafeRegex(ValueError):
    pass


class UnreadableEntry(EntryNotFound):
    """A stored entry that no longer validates (written by an older perfkb, or by hand with SQL).
    It is "not found" to readers, so one bad row never breaks a listing, a page or a search;
    str(e) names the row and how to remove it."""

    def __init__(self, entry_id: str, problem: str) -> None:
        self.entry_id = entry_id
        self.problem = problem
        super().__init__(
            f"entry '{entry_id[:100]}' is stored but cannot be read ({problem}); "
            f"remove it with `perfkb delete {entry_id[:100]}` or `perfkb check --repair`"
        )
