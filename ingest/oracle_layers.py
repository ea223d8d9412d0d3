"""Oracle kernel function prefix -> layer, loaded from ingest/data/oracle_prefixes.tsv.

A stack of `kgebse kgebem ksemgm opiodr` means little until each name is placed in its layer
(kge: error handling, kse: error services, opi: program interface). Lookup is longest-prefix so
`kgiPinObject` lands in kgi and `kglpnp` in kgl. Functions from non-Oracle modules (libc,
libnsl, the OS kernel) are never classified: `nss_search` is not Oracle Net and `sleep` is not
an Oracle `sl` routine.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

TABLE_PATH = Path(__file__).parent / "data" / "oracle_prefixes.tsv"

# Module basenames that belong to an Oracle installation (binaries and shared libraries).
_ORACLE_MODULES = (
    "oracle",
    "tnslsnr",
    "lsnrctl",
    "sqlplus",
    "rman",
    "ora_",
    "libclntsh",
    "libclntshcore",
    "libserver",
    "libjox",
    "libnnz",
    "libocci",
    "libskgxp",
    "libodm",
    "libons",
    "libipc1",
    "libocr",
    "libhasgen",
    "libcell",
    "libsqlplus",
    "libmql",
    "libdbtools",
)

# Common C library / OS names that a prefix would otherwise misread (pstack prints no module).
_NOT_ORACLE_NAMES = frozenset(
    {
        "sleep",
        "nsleep",
        "sscanf",
        "sprintf",
        "snprintf",
        "ntohl",
        "ntohs",
        "kill",
        "sigsuspend",
        "kstat_read",
        "kstat_lookup",
        "kstat_open",
        "kthread",
    }
)
_NOT_ORACLE_PREFIXES = ("nss_", "_", "kstat_", "ktime_", "kthread", "ksys_", "kzalloc", "kmem_")


class OraclePrefix(BaseModel):
    """One row of the prefix table."""

    model_config = ConfigDict(frozen=True)

    prefix: str
    layer: str
    meaning: str


class PrefixTableError(ValueError):
    """The data file is unreadable or has a bad row (a packaging bug, reported clearly)."""


@lru_cache(maxsize=1)
def load_prefixes(path: Path = TABLE_PATH) -> dict[str, OraclePrefix]:
    """Read the TSV once; keys are lower-case prefixes."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PrefixTableError(f"cannot read Oracle prefix table {path}: {exc.strerror}") from None
    table: dict[str, OraclePrefix] = {}
    header_seen = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cols = raw.split("\t")
        if not header_seen:
            header_seen = True
            if cols[0] == "prefix":
                continue
        if len(cols) != 3 or not all(c.strip() for c in cols):
            raise PrefixTableError(f"{path.name} line {number}: want prefix<TAB>layer<TAB>meaning")
        prefix = cols[0].strip().lower()
        if prefix in table:
            raise PrefixTableError(f"{path.name} line {number}: duplicate prefix '{prefix}'")
        table[prefix] = OraclePrefix(prefix=prefix, layer=cols[1].strip(), meaning=cols[2].strip())
    return table


@lru_cache(maxsize=1)
def _longest() -> int:
    return max((len(p) for p in load_prefixes()), default=0)


def is_oracle_module(module: str | None) -> bool:
    """True for a module of an Oracle install; None (module not printed) counts as possibly Oracle."""
    if module is None:
        return True
    base = module.rsplit("/", 1)[-1].lower()
    if base.startswith(_ORACLE_MODULES):
        return True
    return "/product/" in module.lower()  # everything under an ORACLE_HOME is Oracle code


@lru_cache(maxsize=8192)
def _match_name(function: str) -> OraclePrefix | None:
    name = function.lower()
    if name in _NOT_ORACLE_NAMES or name.startswith(_NOT_ORACLE_PREFIXES):
        return None
    table = load_prefixes()
    for size in range(min(len(name), _longest()), 0, -1):
        hit = table.get(name[:size])
        if hit is not None:
            return hit
    return None


def layer_of(function: str, module: str | None = None) -> OraclePrefix | None:
    """The Oracle layer of `function` (longest prefix), or None when it is not Oracle code."""
    if not function or not is_oracle_module(module):
        return None
    return _match_name(function)
