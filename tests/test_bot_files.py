"""Uploaded files: downloaded from the stub with the bot token, streamed into the analysis, size
capped, and never fetched from a host other than Slack's file host or the configured API host.
File contents are seed snippets (tests/fixtures/seeds/, numbers from the seed write-ups)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from slack_stub import TOKEN, Harness, SlackStub, running_harness

from bot.download import DownloadError, FileTooLarge, allowed_url, decode_text, iter_text

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
CAP = 64 * 1024
_ts = itertools.count(1)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    with running_harness(tmp_path_factory.mktemp("files"), max_file_bytes=CAP) as harness:
        yield harness


@pytest.fixture
def fresh_bot(tmp_path: Path):
    with running_harness(tmp_path, max_file_bytes=CAP) as harness:
        yield harness


def ts() -> str:
    return f"1700001000.{next(_ts):06d}"


def share(bot: Harness, file: dict, channel: str, text: str = "", **extra: object) -> str:
    """Send the `message` event Slack sends when a user shares `file`; returns its ts."""
    msg_ts = ts()
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": channel,
        "channel_type": "im" if channel.startswith("D") else "channel",
        "user": "U0ALICE",
        "text": text,
        "ts": msg_ts,
        "files": [file],
        "upload": True,
    }
    event.update(extra)
    assert bot.server.send_event(event).status_code == 200
    return msg_ts


def downloads(bot: Harness, file_id: str) -> list:
    return [c for c in bot.stub.calls if c.path.startswith(f"/files-pri/T0TEST-{file_id}/")]


def texts(call) -> str:
    return call.body.get("text", "") + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def test_shared_file_is_downloaded_with_the_bot_token_and_answered(bot: Harness):
    content = (SEEDS / "002_dtrace_ustack.txt").read_bytes()
    file = bot.stub.add_file("pins.txt", content)
    msg_ts = share(bot, file, "C0FILES", text="from the batch box, 12.2 on Solaris")
    reply = bot.wait_reply("C0FILES", msg_ts)
    assert "http://kb.test/entries/standalone-plsql-pin-overhead" in texts(reply)
    (download,) = downloads(bot, file["id"])
    assert download.headers["authorization"] == f"Bearer {TOKEN}"


def test_file_shared_event_uses_files_info_and_answers_in_the_sharing_thread(fresh_bot: Harness):
    bot = fresh_bot
    content = (SEEDS / "004_dtrace_cladm_ustack.txt").read_bytes()
    file = bot.stub.add_file("cladm.txt", content, channel="C0SHARED", ts="1700001000.999999")
    event = {
        "type": "file_shared",
        "file_id": file["id"],
        "user_id": "U0ALICE",
        "file": {"id": file["id"]},
        "channel_id": "C0SHARED",
        "event_ts": "1700001001.000001",
    }
    bot.server.send_event(event)
    reply = bot.wait_reply("C0SHARED", "1700001000.999999")
    assert "listener-slow-fork-cladm" in texts(reply)
    assert bot.stub.api_calls("files.info")[-1].body["file"] == file["id"]
    # The same upload also arrives as a message with the file: it is not answered again.
    share(bot, file, "C0SHARED")
    bot.drain()
    assert len(bot.replies("C0SHARED")) == 1
    assert len(downloads(bot, file["id"])) == 1


def test_file_over_the_cap_is_refused_with_a_clear_message(bot: Harness):
    file = bot.stub.add_file("huge.txt", b"x" * (CAP + 1))
    msg_ts = share(bot, file, "C0BIG")
    reply = bot.wait_reply("C0BIG", msg_ts)
    assert "`huge.txt` is 64.0 KB; perfkb reads files up to 64.0 KB" in reply.body["text"]
    assert "PERFKB_MAX_FILE_BYTES" in reply.body["text"]
    assert downloads(bot, file["id"]) == []


def test_cap_holds_while_streaming_when_size_is_understated(bot: Harness):
    lines = (SEEDS / "001_truss_shmdt.txt").read_bytes()
    content = lines * (2 * CAP // len(lines))
    file = bot.stub.add_file("liar.txt", content, send_length=False, extra={"size": 100})
    msg_ts = share(bot, file, "C0LIAR")
    reply = bot.wait_reply("C0LIAR", msg_ts)
    assert "perfkb reads files up to 64.0 KB" in reply.body["text"]


def test_url_on_another_host_is_never_fetched(bot: Harness):
    with SlackStub() as internal:
        file = bot.stub.add_file("ssrf.txt", b"x")
        file["url_private"] = f"{internal.url}/latest/meta-data"
        file.pop("url_private_download")
        msg_ts = share(bot, file, "C0SSRF")
        reply = bot.wait_reply("C0SSRF", msg_ts)
        assert "not Slack's file host" in reply.body["text"]
        assert internal.calls == []


def test_redirect_off_the_allow_list_is_not_followed(bot: Harness):
    with SlackStub() as internal:
        target = f"{internal.url}/admin"
        file = bot.stub.add_file("bounce.txt", b"x", redirect_to=target)
        msg_ts = share(bot, file, "C0BOUNCE")
        reply = bot.wait_reply("C0BOUNCE", msg_ts)
        assert "redirected" in reply.body["text"]
        assert internal.calls == []


def test_binary_file_gets_a_short_answer(bot: Harness):
    file = bot.stub.add_file("core.txt", b"\x7fELF\x00\x00\x01" * 50)
    msg_ts = share(bot, file, "C0BIN")
    assert "looks like a binary file" in bot.wait_reply("C0BIN", msg_ts).body["text"]


def test_non_text_upload_is_ignored_in_channels_and_explained_in_dms(fresh_bot: Harness):
    bot = fresh_bot
    image = bot.stub.add_file("graph.png", b"\x89PNG", mimetype="image/png", filetype="png")
    share(bot, image, "C0PNG", text="look at this graph")
    dm_image = bot.stub.add_file("graph2.png", b"\x89PNG", mimetype="image/png", filetype="png")
    share(bot, dm_image, "D0ALICE")
    dm = bot.wait_reply("D0ALICE")
    bot.drain()
    assert bot.replies("C0PNG") == []
    assert "`graph2.png` is not a text file" in texts(dm)
    assert downloads(bot, image["id"]) == [] and downloads(bot, dm_image["id"]) == []


# -- bot.download on its own -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://files.slack.com/files-pri/T1-F1/a.txt", True),
        ("https://files.slack.com:443/files-pri/T1-F1/a.txt", True),
        ("http://files.slack.com/files-pri/T1-F1/a.txt", False),
        ("https://files.slack.com:8443/x", False),
        ("https://files.slack.com.evil.example/x", False),
        ("https://user@files.slack.com/x", False),
        ("http://169.254.169.254/latest/meta-data/", False),
        ("http://127.0.0.1:9999/api/x", False),
        ("http://127.0.0.1:8080/files-pri/x", True),  # the configured API host (a stub)
        ("file:///etc/passwd", False),
        ("https://[::1/x", False),
    ],
)
def test_allowed_url(url: str, ok: bool):
    assert allowed_url(url, "http://127.0.0.1:8080/api/") is ok


def test_lines_are_split_across_chunks_and_utf8_is_decoded_incrementally():
    data = "αβ line one\r\nsecond\nthird without newline".encode()
    chunks = [data[i : i + 3] for i in range(0, len(data), 3)]  # splits inside characters
    pieces = list(decode_text(iter(chunks), "f", 1000))
    assert "".join(pieces) == "αβ line one\nsecond\nthird without newline"
    assert all(p.endswith("\n") for p in pieces[:-1])  # whole lines, but the file's last


def _reference(data: bytes, max_line: int) -> str:
    """What the download hands on, line by line: each line decoded, cut at max_line
    characters, one CR before its LF dropped; the file's last line without a newline."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    cut = [line[:max_line].removesuffix("\r") for line in lines]
    return "\n".join(cut) if cut[-1] else "\n".join(cut[:-1]) + "\n" * (len(cut) > 1)


@pytest.mark.parametrize("size", [1, 3, 7, 64])
@pytest.mark.parametrize(
    "data",
    [
        b"one\r\ntwo\r\n\r\nthree",
        b"a very long first line\r\nshort\nanother long line here\nx\r\r\n",
        b"\n\nab\r",
        "naïve — ünïcode line\r\nand more\n".encode(),
    ],
)
def test_pieces_hold_the_lines_a_line_reader_gives(monkeypatch, data: bytes, size: int):
    from bot import download

    monkeypatch.setattr(download, "MAX_LINE", 10)
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert "".join(decode_text(iter(chunks), "f", 1000)) == _reference(data, 10)


def test_a_huge_single_line_keeps_memory_bounded():
    from bot import download

    chunks = [b"a" * 65536] * 40  # 2.5 MB without a newline
    (line,) = list(decode_text(iter(chunks), "f", 10 * 1024 * 1024))
    assert len(line) == download.MAX_LINE


def test_stream_cap_raises_too_large():
    with pytest.raises(FileTooLarge, match="perfkb reads files up to 1.0 KB"):
        list(decode_text(iter([b"x\n" * 400, b"y\n" * 400]), "f", 1024))


def test_refused_download_names_the_scope():
    with SlackStub() as stub:
        file = stub.add_file("a.txt", b"hello\n")
        with pytest.raises(DownloadError, match="files:read"):
            list(
                iter_text(
                    file["url_private"], token="xoxp-user", api_url=stub.api_url, max_bytes=100
                )
            )
