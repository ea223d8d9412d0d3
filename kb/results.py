"""What an analysis returns: the one object the bot, the web page, the API and the CLI render."""

# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).
from typing import Literal

from pydantic import BaseModel, Field

from ingest.model import Block, Context, new_dict, new_list

Confidence = Literal["high", "medium", "low"]


class ConditionOutcome(BaseModel):
    """One condition of a signature and what the evidence showed for it."""

    condition: str  # readable form of the condition
    held: bool
    observed: str  # "shmdt: 10 calls, avg 24.2 ms ≥ 5 ms"
    wanted: str = Field(
        "", description="for a fact leaf that did not hold: what would make it hold, in words"
    )


class SignatureOutcome(BaseModel):
    name: str
    weight: float
    held: bool
    specific: bool
    block_formats: list[str] = Field(default_factory=new_list)
    conditions: list[ConditionOutcome] = Field(default_factory=new_list)


class Match(BaseModel):
    id: str
    title: str
    score: float
    confidence: Confidence
    evidence: list[str] = Field(default_factory=new_list, description="observations that held")
    versions: list[str] = Field(default_factory=new_list, description="version verdicts")
    signatures: list[SignatureOutcome] = Field(default_factory=new_list)
    related_only: bool = Field(False, description="surfaced by text similarity, no signature held")
    feedback: dict[str, int] = Field(default_factory=new_dict)
    reason: str = Field("", description="why this confidence, in one line a person can follow")
    near_misses: list[str] = Field(
        default_factory=new_list,
        description="'would match if ...; it is ...' for the closest misses",
    )
    mentions: list[str] = Field(
        default_factory=new_list,
        description="names of this entry the evidence mentions (text only)",
    )


class SuggestedCommand(BaseModel):
    command: str
    platform: str = Field(description="solaris, linux, or any (Oracle commands run anywhere)")
    why: str
    source: str = Field("triage", description="entry id, or 'triage:RULE' (kb/rules/triage.yaml)")


class Finding(BaseModel):
    """One sentence of triage (kb/triage.py): what the evidence says, in words."""

    text: str
    source: str = Field("facts", description="'facts', or the triage rule that wrote it")
    format: str | None = None
    lines: str | None = Field(None, description="lines of the paste it is about, 'first-last'")


class AnalysisResult(BaseModel):
    blocks: list[Block] = Field(default_factory=new_list)
    context: Context = Field(default_factory=Context)
    findings: list[Finding] = Field(default_factory=new_list, description="triage sentences")
    matches: list[Match] = Field(default_factory=new_list)
    next_commands: list[SuggestedCommand] = Field(default_factory=new_list)
    platform: str | None = None
    fingerprint: str = ""
    elapsed_ms: float = 0.0
