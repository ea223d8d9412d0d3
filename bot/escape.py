"""The one home of escaping for the text the bot posts as Slack mrkdwn.

Why: anything a user controls (an uploaded file's name, an entry's title, a search query, the
evidence's event and function names, an error that quotes them) ends up inside messages the bot
posts to a channel. Slack turns ``<!channel>``, ``<@U…>`` and ``<http://x|y>`` into live mentions
and links, and a backtick ends a code span, so an unescaped file name such as
``a`<!channel>`.txt`` pings everybody. Slack's rules: ``&``, ``<`` and ``>`` are written
``&amp;``, ``&lt;``, ``&gt;`` everywhere (code spans included; Slack shows them as the
characters). Formatting characters have no escape in mrkdwn, so where user text sits inside a
code span or next to formatting they are replaced by look-alikes that Slack does not read.

Use ``text()`` for user text in running mrkdwn, ``code()`` for a value inside an inline code span
(the caller writes the backticks), ``code_block()`` for text inside a ```` ``` ```` block, and
``label()`` for a link's label.
"""

from __future__ import annotations

import re

# Look-alikes Slack does not read as markup.
_BACKTICK = "\u02cb"  # ˋ modifier letter grave accent
_ASTERISK = "\u2217"  # ∗ asterisk operator
_TILDE = "\u223c"  # ∼ tilde operator
_UNDERSCORE = "\u02cd"  # ˍ modifier letter low macron
_PIPE = "\u00a6"  # ¦ broken bar
_ZWSP = "\u200b"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
# `*`, `_` and `~` open or close bold, italics and strike only at a word's edge; inside a word
# (SQL*Net, ora_lgwr) they are text and stay as they are, so evidence reads as it was pasted.
_EDGE_MARK = re.compile(r"(?<![0-9A-Za-z])[*_~]|[*_~](?![0-9A-Za-z])")
_LOOK_ALIKE = {"*": _ASTERISK, "_": _UNDERSCORE, "~": _TILDE}


def esc(value: object) -> str:
    """Slack's three escapes (``&``, ``<``, ``>``): what every piece of user text needs."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def text(value: object) -> str:
    """User text placed in running mrkdwn: escaped, control characters dropped, backticks and
    the formatting characters at a word's edge (``*`` ``_`` ``~``) replaced by look-alikes, so
    the text can neither open a code span nor bold, strike or italicise what follows."""
    out = _CONTROL.sub(" ", esc(value)).replace("`", _BACKTICK)
    return _EDGE_MARK.sub(lambda m: _LOOK_ALIKE[m.group(0)], out)


def code(value: object, limit: int = 200) -> str:
    """A value shown inside an inline code span: escaped, on one line, no backtick (any
    backtick would end the span), at most `limit` characters."""
    out = _CONTROL.sub(" ", esc(value)).replace("\n", " ").replace("`", _BACKTICK)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def code_block(value: object) -> str:
    """Text inside a ```` ``` ```` block (a suggested command): escaped, and any run of three
    backticks broken with a zero-width space so the block cannot be closed from inside. Single
    backticks stay: the text is meant to be copied."""
    out = esc(value)
    while "```" in out:
        out = out.replace("```", f"``{_ZWSP}`")
    # a backtick right at either end would join the fence
    if out.startswith("`"):
        out = _ZWSP + out
    if out.endswith("`"):
        out += _ZWSP
    return out


def label(value: object) -> str:
    """A link's label (``<url|label>``): escaped, and ``|`` replaced, since it ends the URL part."""
    return text(value).replace("|", _PIPE)
