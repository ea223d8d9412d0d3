"""Block Kit for analyses, searches and help. Rendering only: every number comes from the
AnalysisResult or SearchPage given.

Slack refuses messages with more than 50 blocks or a text over 3,000 characters, and in practice
rejects block payloads much above 12k characters, so a message is rendered at decreasing detail
until it fits; the smallest form is a summary with a link to the full analysis on the web page.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from bot.escape import code, code_block, esc, label, text
from ingest.facts import number
from ingest.model import Block as EvidenceBlock
from kb.results import AnalysisResult, Match

MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_MESSAGE = 12_000
FALLBACK_TEXT = 300


class Message(BaseModel):
    """What chat.postMessage / chat.update / respond() receive."""

    text: str
    blocks: list[dict[str, Any]]

    def size(self) -> int:
        return len(json.dumps(self.blocks, ensure_ascii=False))


class Detail(BaseModel):
    """How much to show; render_analysis tries these from most to least."""

    blocks_listed: int
    findings: int
    matches: int
    evidence_lines: int
    commands: int
    summary_only: bool = False


DETAILS = (
    Detail(blocks_listed=8, findings=6, matches=5, evidence_lines=5, commands=6),
    Detail(blocks_listed=4, findings=3, matches=3, evidence_lines=2, commands=3),
    Detail(
        blocks_listed=2,
        findings=1,
        matches=3,
        evidence_lines=0,
        commands=0,
        summary_only=True,
    ),
)


# -- text helpers --------------------------------------------------------------------------------


def clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def link(url: str, title: str) -> str:
    """A link to our own URL (built from validated ids and quoted), labelled with user text."""
    return f"<{esc(url)}|{label(title)}>"


def entry_url(base_url: str, entry_id: str) -> str:
    return f"{base_url.rstrip('/')}/entries/{quote(entry_id)}"


def analysis_url(base_url: str, analysis_id: str) -> str:
    return f"{base_url.rstrip('/')}/analyze/{quote(analysis_id)}"


def section(text: str, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}
    if block_id:
        block["block_id"] = block_id
    return block


def context(text: str, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": clip(text)}],
    }
    if block_id:
        block["block_id"] = block_id
    return block


DIVIDER: dict[str, Any] = {"type": "divider"}


# -- evidence --------------------------------------------------------------------------------------


def describe_block(block: EvidenceBlock) -> str:
    """Which capture, where in the paste: the numbers are said by the triage sentences."""
    where = f"lines {block.start_line}–{block.end_line}"
    platform = f", {block.platform}" if block.platform and block.platform != "any" else ""
    head = f"{block.format}{platform} ({where})"
    if block.malformed_lines:
        n = block.malformed_lines
        head += f", {number(n)} line{'' if n == 1 else 's'} not understood"
    if block.facts.get("os.since_boot") == 1:
        head += ", counters since boot (totals, not rates)"
    return head


def evidence_blocks(result: AnalysisResult) -> list[EvidenceBlock]:
    return [b for b in result.blocks if b.format != "unknown"]


def has_evidence(result: AnalysisResult) -> bool:
    return bool(evidence_blocks(result))


# -- matches and feedback --------------------------------------------------------------------------

_FEEDBACK_ID = re.compile(r"^fb-(right|wrong):([a-z0-9-]{1,100}):(.{1,120})$")
FEEDBACK_ACTION = re.compile(r"^fb-(right|wrong):")
NO_FINGERPRINT = "none"


def feedback_action_id(verdict: str, entry_id: str, fingerprint: str) -> str:
    return f"fb-{verdict}:{entry_id}:{fingerprint or NO_FINGERPRINT}"


def parse_feedback_action_id(action_id: str) -> tuple[str, str, str] | None:
    """(verdict, entry_id, fingerprint) or None when the id is not ours."""
    m = _FEEDBACK_ID.match(action_id)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def feedback_line(counts: dict[str, int], note: str = "") -> str:
    right, wrong = counts.get("right", 0), counts.get("wrong", 0)
    tally = f"on this kind of evidence: {right} right · {wrong} wrong"
    return f"{note} · votes {tally}" if note else f"Was this the cause? Votes {tally}"


def match_blocks(
    match: Match, rank: int, result: AnalysisResult, base_url: str, detail: Detail
) -> list[dict[str, Any]]:
    kind = "related (text only)" if match.related_only else f"{match.confidence} confidence"
    lines = [
        f"*{rank}. {link(entry_url(base_url, match.id), match.title)}*  ·  {kind}"
        f" · score {match.score:.2f}"
    ]
    shown = match.evidence[: detail.evidence_lines]
    lines += [f"•  {text(clip(obs, 300))}" for obs in shown]
    if len(match.evidence) > len(shown) and detail.evidence_lines:
        lines.append(f"_…and {len(match.evidence) - len(shown)} more observations_")
    if match.reason:
        lines.append("_Why:_ " + text(clip(match.reason, 300)))
    if match.versions and not detail.summary_only:
        lines.append("_Versions:_ " + text(clip("; ".join(match.versions), 500)))
    if not detail.summary_only:
        lines += [f"•  _{text(clip(miss, 300))}_" for miss in match.near_misses[:2]]
    fp = result.fingerprint
    return [
        section("\n".join(lines), block_id=f"m:{match.id}"),
        {
            "type": "actions",
            "block_id": f"fb:{match.id}",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Right cause"},
                    "style": "primary",
                    "action_id": feedback_action_id("right", match.id, fp),
                    "value": match.id,
                },
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Wrong cause"},
                    "style": "danger",
                    "action_id": feedback_action_id("wrong", match.id, fp),
                    "value": match.id,
                },
            ],
        },
        context(feedback_line(match.feedback), block_id=f"fbc:{match.id}"),
    ]


def mark_feedback(
    blocks: list[dict[str, Any]], entry_id: str, user: str, verdict: str, counts: dict[str, int]
) -> list[dict[str, Any]]:
    """The message's blocks with the feedback line of `entry_id` showing the recorded vote."""
    note = f"Recorded: <@{user}> says *{verdict} cause*"
    line = context(feedback_line(counts, note), block_id=f"fbc:{entry_id}")
    out = [line if b.get("block_id") == f"fbc:{entry_id}" else b for b in blocks]
    if line not in out:
        at = next(
            (i + 1 for i, b in enumerate(out) if b.get("block_id") == f"fb:{entry_id}"), len(out)
        )
        out.insert(at, line)
    return out[:MAX_BLOCKS]


# -- whole messages --------------------------------------------------------------------------------


def fallback_text(result: AnalysisResult) -> str:
    formats = sorted({b.format for b in evidence_blocks(result)})
    head = f"perfkb: {len(evidence_blocks(result))} evidence block(s) ({', '.join(formats)})"
    if result.matches:
        top = result.matches[0]
        # the notification text is mrkdwn too: an entry title must not @channel anybody
        return clip(f"{head}; top match: {text(top.title)} ({top.confidence})", FALLBACK_TEXT)
    return clip(f"{head}; no known incident matched", FALLBACK_TEXT)


_PLATFORM_LABEL = {"any": "Oracle, any platform", "solaris": "Solaris", "linux": "Linux"}


def _plural(n: int, word: str) -> str:
    return f"{number(n)} {word}{'' if n == 1 else 's'}"


def _render(
    result: AnalysisResult, base_url: str, analysis_id: str | None, detail: Detail
) -> Message:
    found = evidence_blocks(result)
    platform = result.platform or result.context.platform
    head = f"*Evidence:* {_plural(len(found), 'block')}"
    if platform and platform != "any":
        head += f" · platform {platform}"
    if result.context.versions:
        head += " · versions " + text(", ".join(result.context.versions[:4]))
    # What the evidence says, in the triage's sentences (never the internal fact names)
    said = [f"•  {text(clip(f.text, 400))}" for f in result.findings[: detail.findings]]
    blocks: list[dict[str, Any]] = [section("\n".join([head, *said]))]
    listed = [describe_block(b) for b in found[: detail.blocks_listed]]
    if len(found) > len(listed):
        listed.append(f"{len(found) - len(listed)} more")
    if listed:
        blocks.append(context(text("Read: " + "; ".join(listed))))

    strong = [m for m in result.matches if not m.related_only]
    related = [m for m in result.matches if m.related_only]
    if strong:
        blocks.append(DIVIDER)
        blocks.append(section("*Known incidents that fit*"))
        for rank, match in enumerate(strong[: detail.matches], start=1):
            blocks += match_blocks(match, rank, result, base_url, detail)
        if len(strong) > detail.matches:
            blocks.append(context(f"{len(strong) - detail.matches} more matches"))
    else:
        blocks.append(
            section(
                "No known incident matched this evidence. If you find the cause, add it with the "
                "message shortcut *Add to knowledge base*."
            )
        )
    if related and not detail.summary_only:
        names = [
            link(entry_url(base_url, m.id), m.id)
            + (f" ({text(', '.join(m.mentions))})" if m.mentions else "")
            for m in related[:6]
        ]
        blocks.append(context("Also mentions: " + "; ".join(names)))

    commands = result.next_commands[: detail.commands]
    if commands:
        known = platform in ("solaris", "linux")
        lines = [f"*Next commands ({platform})*" if known else "*Next commands*"]
        for plat in ("any", "solaris", "linux"):
            mine = [c for c in commands if c.platform == plat]
            if not mine:
                continue
            if not known:
                lines.append(f"_{_PLATFORM_LABEL[plat]}:_")
            for cmd in mine:
                lines.append(
                    f"{text(clip(cmd.why, 300))}\n```{code_block(clip(cmd.command, 600))}```"
                )
        blocks += [DIVIDER, section("\n".join(lines))]

    footer = f"analysed in {result.elapsed_ms:.0f} ms"
    if analysis_id:
        footer = link(analysis_url(base_url, analysis_id), "Full analysis") + " · " + footer
    if detail.summary_only:
        footer = "Evidence too big for one Slack message: summary only · " + footer
    elif detail != DETAILS[0]:
        footer = "Shortened to fit Slack · " + footer
    blocks.append(context(footer))
    return Message(text=fallback_text(result), blocks=blocks[:MAX_BLOCKS])


def render_analysis(
    result: AnalysisResult, *, base_url: str, analysis_id: str | None = None
) -> Message:
    """The reply to a message with evidence, at the most detail Slack accepts."""
    message = None
    for detail in DETAILS:
        message = _render(result, base_url, analysis_id, detail)
        if message.size() <= MAX_MESSAGE:
            return message
    assert message is not None
    # Still too big (absurdly long titles): keep the head and the footer with the link.
    return Message(text=message.text, blocks=[message.blocks[0], message.blocks[-1]])


HELP = (
    "*perfkb* reads performance evidence and names known incidents that fit it.\n"
    "•  Paste a tkprof report, truss/strace output, mpstat, vmstat, iostat, sar, pidstat or "
    "prstat samples, a pstack or DTrace stack, an AWR/Statspack wait-event table, perf or "
    "lockstat output, top, free, /proc/meminfo or netstat -s (a ``` code block helps), or upload "
    "it as a text file: "
    "I answer in the thread.\n"
    "•  `/perfkb search QUERY`: search the knowledge base "
    "(filters: `platform:solaris`, `source:truss`, `version:12.2`, `tag:numa`).\n"
    "•  `/perfkb show ID`: one entry's symptom, cause, fix and commands.\n"
    "•  `/perfkb analyze`: paste evidence into a form; the analysis comes back in a DM.\n"
    "•  `/perfkb add`: write up a new incident.\n"
    "•  `/perfkb edit ID`: change an entry (every field, in a form).\n"
    "•  Message menu ⋮ → *Add to knowledge base*: an entry prefilled from a thread's evidence.\n"
    "•  *Right cause* / *Wrong cause* under a suggestion improve the ranking."
)


def render_help(note: str = "") -> Message:
    """Help, after `note` (mrkdwn the caller built: user text in it went through bot.escape)."""
    body = f"{note}\n\n{HELP}" if note else HELP
    return Message(text="perfkb help", blocks=[section(body)])


def _snippet(parts: list) -> str:
    """A hit's fragment as mrkdwn: the query's words bold; every part is user text (bot/escape.py's
    text(), so it cannot add formatting of its own)."""
    out: list[str] = []
    for part in parts:
        piece = text(part.text)
        out.append(f"*{piece.strip()}*" if part.hit and piece.strip() else piece)
    return "".join(out)


def render_search(page: Any, base_url: str) -> Message:
    """A SearchPage (kb.store) as a short list."""
    if not page.results:
        return Message(
            text=f"perfkb: nothing found for {text(page.query)}",
            blocks=[section(f"Nothing in the knowledge base matches `{code(page.query)}`.")],
        )
    query_url = f"{base_url.rstrip('/')}/search?q={quote(page.query)}"
    blocks = [
        section(
            f"*{page.total} result(s) for* `{code(page.query)}` · "
            + link(query_url, "open in the web page")
        )
    ]
    for hit in page.results[:10]:
        tags = " · ".join(x for x in (", ".join(hit.platforms), ", ".join(hit.sources)) if x)
        body = f"*{link(entry_url(base_url, hit.id), hit.title)}*"
        if tags:
            body += f"  _{text(tags)}_"
        if hit.snippet:
            body += "\n" + clip(_snippet(hit.snippet), 600)
        blocks.append(section(body))
    return Message(text=f"perfkb: {page.total} result(s) for {text(page.query)}", blocks=blocks)


# -- one entry, the App Home, link previews ----------------------------------------------------------


def _excerpt(value: str, limit: int) -> str:
    return text(clip(" ".join(value.split()), limit))


def render_entry(entry: Any, base_url: str, *, commands: int = 4) -> Message:
    """`/perfkb show ID`: an entry's symptom, cause and fix, with its first commands."""
    head = f"*{link(entry_url(base_url, entry.id), entry.title)}*"
    tags = " · ".join(x for x in (", ".join(entry.platforms), ", ".join(entry.tags)) if x)
    if tags:
        head += f"\n_{text(tags)}_"
    blocks = [
        section(head, block_id=f"entry:{entry.id}"),
        section(f"*Symptom*\n{_excerpt(entry.symptom, 700)}"),
        section(f"*Root cause*\n{_excerpt(entry.root_cause, 700)}"),
        section(f"*Fix*\n{_excerpt(entry.fix, 700)}"),
    ]
    shown = entry.next_commands[:commands]
    if shown:
        lines = ["*Next commands*"]
        for c in shown:
            where = _PLATFORM_LABEL.get(c.platform, c.platform)
            lines.append(f"_{text(where)}:_ {text(clip(c.why, 200))}")
            lines.append(f"```{code_block(clip(c.command, 500))}```")
        blocks.append(section("\n".join(lines)))
    when = entry.updated.date().isoformat()
    blocks.append(context(f"updated {when} · " + link(entry_url(base_url, entry.id), "open")))
    return Message(text=f"perfkb: {text(clip(entry.title, 200))}", blocks=blocks)


def _analysis_line(analysis_id: str, created: str, result_json: str, base_url: str) -> str:
    """One saved analysis as a line: its top match (or what its evidence was), when, a link."""
    try:
        data = json.loads(result_json)
    except ValueError:
        data = {}
    matches = [m for m in data.get("matches") or [] if not m.get("related_only")]
    formats = sorted({b.get("format") for b in data.get("blocks") or [] if b.get("format")})
    formats = [f for f in formats if f != "unknown"]
    if matches:
        what = f"{matches[0].get('title', '?')} ({matches[0].get('confidence', '?')})"
    else:
        what = "no known incident · " + (", ".join(formats) or "no evidence")
    when = created[:16].replace("T", " ")
    return f"•  {link(analysis_url(base_url, analysis_id), when)} {text(clip(what, 200))}"


def render_home(
    analyses: list[tuple[str, str, str]], entries: list[Any], base_url: str, days: int = 30
) -> dict[str, Any]:
    """The App Home tab: recent analyses and the entries added in the last `days` days."""
    blocks: list[dict[str, Any]] = [
        section(
            "*perfkb* names known Oracle and OS performance incidents in the evidence you paste. "
            "Paste a capture in a channel I am in, DM me, or use `/perfkb analyze`."
        ),
        DIVIDER,
        section("*Recent analyses*"),
    ]
    if analyses:
        lines = [_analysis_line(*a, base_url) for a in analyses[:10]]
        blocks.append(section("\n".join(lines)))
    else:
        blocks.append(context("No analyses yet."))
    blocks += [DIVIDER, section(f"*Entries added in the last {days} days*")]
    if entries:
        lines = [f"•  {link(entry_url(base_url, e.id), e.title)}" for e in entries[:15]]
        blocks.append(section("\n".join(lines)))
    else:
        blocks.append(context(f"No entries added in the last {days} days."))
    blocks.append(context(link(base_url.rstrip("/") + "/", "Open the knowledge base")))
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}


def unfurl_entry(entry: Any, base_url: str) -> dict[str, Any]:
    """A link to an entry, previewed: its title and symptom."""
    body = f"*{link(entry_url(base_url, entry.id), entry.title)}*\n{_excerpt(entry.symptom, 300)}"
    return {"blocks": [section(body)]}


def unfurl_analysis(analysis_id: str, result: AnalysisResult, base_url: str) -> dict[str, Any]:
    """A link to a saved analysis, previewed: what its evidence says and its top match."""
    said = [f"•  {text(clip(f.text, 300))}" for f in result.findings[:3]]
    strong = [m for m in result.matches if not m.related_only]
    head = f"*{link(analysis_url(base_url, analysis_id), 'perfkb analysis')}*"
    if strong:
        head += f" · {text(clip(strong[0].title, 200))} ({strong[0].confidence})"
    return {"blocks": [section("\n".join([head, *said]))]}
