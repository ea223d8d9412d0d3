"""What the search index holds for an entry (IndexDoc, built from the entry; a digest that says
when it changed), the stamp that says which SQLite revision the index reflects, and what a search
returns (SearchHit, SearchPage: part of the Store interface, which re-exports them)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from ingest.model import new_dict, new_list
from kb.models import Entry
from kb.search_file import INDEX_SCHEMA_VERSION, ident_key  # ident_key's home: no pydantic
from kb.search_query import Page
from kb.signatures import TextCondition, walk

# --------------------------------------------------------------------------------------------
# documents and stamps


__all__ = ["INDEX_SCHEMA_VERSION", "IndexDoc", "SearchHit", "SearchPage", "SnippetPart", "Stamp"]


class IndexDoc(BaseModel):
    """What the index holds for one entry."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    id: str
    title: str
    symptom: str = ""
    root_cause: str = ""
    fix: str = ""
    commands: str = ""
    identifiers: list[str] = Field(default_factory=new_list)
    platforms: list[str] = Field(default_factory=new_list)
    sources: list[str] = Field(default_factory=new_list)
    products: list[str] = Field(default_factory=new_list)
    tags: list[str] = Field(default_factory=new_list)
    versions: str = "[]"  # JSON list of VersionRange, for version: filtering
    digest: str = ""  # of the entry JSON, so `check` can tell a stale document


def entry_digest(entry: Entry) -> str:
    return hashlib.sha256(entry.model_dump_json(by_alias=True).encode()).hexdigest()[:32]


def entry_identifiers(entry: Entry) -> list[str]:
    """Signature keys (syscalls, functions, events) plus the literal texts signatures look for."""
    out = list(entry.searchable_identifiers())
    for sig in entry.signatures:
        for leaf in walk(sig.when):
            if isinstance(leaf, TextCondition) and leaf.text and leaf.text not in out:
                out.append(leaf.text)
    return out


def entry_keys(entry: Entry) -> list[str]:
    """The entry's identifier keys as the index's `identifiers` field tokenises them, repeats
    kept (a repeat is a term frequency of two): what kb.bm25 counts."""
    return [k for k in (ident_key(i) for i in entry_identifiers(entry)) if k]


# at most this many distinct evidence keys are looked up by a similarity query
MAX_SIMILAR_TERMS = 500


def query_keys(identifiers: Iterable[str]) -> list[str]:
    """The distinct keys of the evidence's identifiers a similarity query asks for, sorted
    (SearchIndex.similar and kb.bm25 alike)."""
    return sorted({k for k in (ident_key(i) for i in identifiers) if k})[:MAX_SIMILAR_TERMS]


def doc_from_entry(entry: Entry) -> IndexDoc:
    commands = "\n".join(f"{c.command}\n{c.why}" for c in entry.next_commands)
    products: list[str] = []
    for r in entry.affected_versions:
        if r.product.lower() not in products:
            products.append(r.product.lower())
    return IndexDoc(
        id=entry.id,
        title=entry.title,
        symptom=entry.symptom,
        root_cause=entry.root_cause,
        fix=entry.fix,
        commands=commands,
        identifiers=entry_identifiers(entry),
        platforms=list(entry.platforms),
        sources=entry.sources(),
        products=products,
        tags=list(entry.tags),
        versions=json.dumps([r.model_dump(mode="json") for r in entry.affected_versions]),
        digest=entry_digest(entry),
    )


class Stamp(BaseModel):
    """Which SQLite state the index reflects: every revision up to `rev` of store `store_id`."""

    store_id: str
    rev: int
    schema_version: int = INDEX_SCHEMA_VERSION
    build: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])


# --------------------------------------------------------------------------------------------
# search results (kb.store re-exports these: they are part of the Store interface). The search
# makes kb.search_file's dataclasses (Page, Hit, Part: what `perfkb search` prints without
# pydantic); these are their validated twins for the store's callers and the HTTP API.


class SnippetPart(BaseModel):
    """A piece of a hit's fragment as plain text; `hit` marks the query's words. The core says
    what to highlight and each renderer says how (HTML <mark>, bold in a terminal, *bold* in
    Slack), so no renderer parses markup made here."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    text: str
    hit: bool = False


class SearchHit(BaseModel):
    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    id: str
    title: str
    score: float
    snippet: list[SnippetPart] = Field(
        default_factory=new_list
    )  # the field holding most query words
    platforms: list[str] = Field(default_factory=new_list)
    sources: list[str] = Field(default_factory=new_list)
    tags: list[str] = Field(default_factory=new_list)
    products: list[str] = Field(default_factory=new_list)


class SearchPage(BaseModel):
    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    query: str
    total: int
    page: int
    per_page: int
    results: list[SearchHit] = Field(default_factory=new_list)
    facets: dict[str, dict[str, int]] = Field(default_factory=new_dict)

    @classmethod
    def of(cls, page: Page) -> SearchPage:
        """The search's own page (kb.search_file.Page), as this model: validated from its
        attributes (nested dataclasses too), not through dataclasses.asdict, whose deep copy
        of every hit, snippet part and facet cost ~1 ms of a ~3 ms search at 10k entries."""
        return cls.model_validate(page, from_attributes=True)
