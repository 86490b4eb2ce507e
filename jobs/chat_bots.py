"""Alert webhooks that are chat bots: Feishu/Lark, WeCom (企业微信), DingTalk (钉钉) and Slack.

A team pastes its group bot's webhook as an alert webhook; the bot posts nothing for our own
JSON (Feishu answers HTTP 200 with `{"code":19002,...}`), so each bot gets a human message in
its own format, and its answer is read: a 200 carrying a non-zero code is a failure.

- Recognised by the URL's path, so a private deployment on a company domain (Feishu/Lark
  private, a gateway that keeps the paths) is one too: `/open-apis/bot/v2/hook/...` (Feishu,
  Lark), `/cgi-bin/webhook/send?key=...` (WeCom), `/robot/send?access_token=...` (DingTalk);
  Slack by its host as well (`hooks.slack.com/services/...`: other services use that path).
  Any other URL gets the console's JSON, unchanged (jobs.alerts: programs read it).
- Plain text, not markdown: a job's name or a failure reason is written by its user, and
  text shows it as written on every platform. Slack reads `&`, `<` and `>` in any text as
  markup (`<!channel>` notifies everyone, `<url|words>` is a link): they are escaped for it,
  as Slack's formatting reference says, and it shows them as written. Feishu reads
  `<at user_id="all">` in a text message as a mention of the whole group, WeCom `<@userid>`:
  where the console's text holds one (a job's name, a reason copied from a log line), a
  zero-width space after its `<` leaves it shown as written and pinging no one
  (`mentions_quieted`; qa59). DingTalk mentions only those its body's `at` field names (the
  console sends none); Slack's `<!channel>` is escaped as above.
- Signing (DingTalk's 加签, Feishu's 签名校验): the secret is given after the URL as a
  fragment, `#secret=SEC...`. A fragment is never sent by HTTP, so the bot's URL stays the
  same, and it lives in the webhook line wherever the line goes (Copy & edit, import, the
  API). It is a secret: shown as `#secret=******` everywhere (`secret_masked`), put back from
  the stored job or draft when a form returns it masked (`secrets_restored`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

import httpx
from django.utils import timezone
from django.utils.translation import gettext

FEISHU = "feishu"
WECOM = "wecom"
DINGTALK = "dingtalk"
SLACK = "slack"

# How each is named in an AlertFailed event (its own name: events quote its answer as is).
BOT_NAMES = {FEISHU: "Feishu/Lark", WECOM: "WeCom", DINGTALK: "DingTalk", SLACK: "Slack"}
# The bots that sign requests with a secret of their own.
SIGNING_BOTS = frozenset({FEISHU, DINGTALK})

SECRET_MARK = "secret="
MASK = "******"
# WeCom's text message holds at most 2048 bytes (UTF-8); the others more. One bound for all,
# with room for the lines around the message.
MAX_TEXT_BYTES = 2000
# How much of a bot's own error text an event keeps.
MAX_ANSWER_CHARS = 200


class BotRefused(Exception):
    """The bot answered, but did not post the message: its own words (bounded, scrubbed);
    `keyword`: it refused the message for holding none of its keywords; `status`: its
    HTTP status (a 5xx or 429 is tried again later, as any webhook's); `rate_limited`: it
    takes no more messages for now (rate_limited), tried again later as after a 429."""

    def __init__(
        self, text: str, *, keyword: bool = False, status: int = 200, rate_limited: bool = False
    ) -> None:
        super().__init__(text)
        self.keyword = keyword
        self.status = status
        self.rate_limited = rate_limited


# How DingTalk (自定义关键词) and Feishu (自定义关键词) say a message holds none of the bot's
# keywords: DingTalk's errcode 310000 covers signing too, so its words are read.
FEISHU_KEYWORD_CODE = 19024


def _answer(response: httpx.Response) -> dict | None:
    """The bot's JSON answer, None when it is not a JSON object."""
    try:
        answer = json.loads(response.text)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def keyword_refusal(*, bot: str, response: httpx.Response) -> bool:
    """Whether the bot refused the message for holding none of its keywords."""
    answer = _answer(response)
    if answer is None:
        return False
    if bot == DINGTALK:
        return answer.get("errcode") == 310000 and "keyword" in str(answer.get("errmsg")).lower()
    if bot == FEISHU:
        return answer.get("code") == FEISHU_KEYWORD_CODE
    return False


# How each bot says it takes no more messages for now, its own 429 (a group bot posts about
# 20 a minute, Feishu's 100 a minute and 5 a second, DingTalk's then none for 10 minutes):
# Feishu code 9499 (with HTTP 400), WeCom errcode 45009, DingTalk errcode 130101 (with 200).
# Review28: many jobs failing at once went past it, and the alerts refused were lost.
RATE_LIMIT_CODES = {FEISHU: {9499}, WECOM: {45009}, DINGTALK: {130101}}


def rate_limited(*, bot: str, response: httpx.Response) -> bool:
    """Whether the bot refused the message for its rate limit (RATE_LIMIT_CODES)."""
    answer = _answer(response)
    if answer is None:
        return False
    code = answer.get("code") if bot == FEISHU else answer.get("errcode")
    return code in RATE_LIMIT_CODES.get(bot, set())


def bot_of(url: str) -> str | None:
    """Which chat bot `url` is (FEISHU, WECOM, DINGTALK, SLACK), or None for any other (one
    that does not read as a URL too: the spec's check refuses it)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname or ""
    except ValueError:
        return None
    path = parts.path
    query = parse_qs(parts.query)
    if path.startswith("/open-apis/bot/v2/hook/") and len(path) > len("/open-apis/bot/v2/hook/"):
        return FEISHU
    if path.rstrip("/") == "/cgi-bin/webhook/send" and query.get("key"):
        return WECOM
    if path.rstrip("/") == "/robot/send" and query.get("access_token"):
        return DINGTALK
    if hostname.lower() == "hooks.slack.com" and path.startswith("/services/"):
        return SLACK
    return None


def split_secret(url: str) -> tuple[str, str]:
    """(the URL without a `#secret=` fragment, the secret or "")."""
    base, sep, fragment = url.partition("#")
    if sep and fragment.startswith(SECRET_MARK):
        return base, fragment[len(SECRET_MARK) :]
    return url, ""


def secret_masked(url: str) -> str:
    """The webhook line as shown, even to its owner: a signing secret as `#secret=******`,
    and any other fragment as `#******`: one that is not `secret=` (`#Secret=`, `#sign=`,
    `#x#secret=`) is most likely a secret mistyped, and a fragment is never sent, so hiding
    it hides nothing a receiver gets."""
    base, _sep, fragment = url.partition("#")
    if fragment in ("", SECRET_MARK, MASK, SECRET_MARK + MASK):
        return url  # nothing to hide (no fragment, an empty secret, or masked already)
    if fragment.startswith(SECRET_MARK):
        return f"{base}#{SECRET_MARK}{MASK}"
    return f"{base}#{MASK}"


# A DingTalk robot's signing secret as its page shows it (SEC and 64 hex digits); a shorter
# run of hex too, as a secret cut short in the paste.
DINGTALK_SECRET_SHAPE = re.compile(r"SEC[0-9a-fA-F]{16,}")


def pasted_secret(line: str) -> str | None:
    """The webhook line as shown (the secret as ******) when it looks like a signing secret
    pasted without `#secret=`, else None: a signing bot's URL, a space and one more word
    (the secret beside the URL); DingTalk's secret alone on its line; or a signing bot's URL
    with the secret as a query parameter (`&secret=`), which the bot would be sent and
    ignore. Each of these failed only later, when the bot refused the unsigned message."""
    words = line.split()
    if len(words) == 2 and bot_of(words[0]) in SIGNING_BOTS:
        return f"{secret_masked(words[0])} {MASK}"
    if len(words) == 1 and DINGTALK_SECRET_SHAPE.fullmatch(line):
        return MASK
    if len(words) == 1 and bot_of(line) in SIGNING_BOTS:
        base, sep, fragment = line.partition("#")
        parts = urlsplit(base)
        pairs = [pair.partition("=") for pair in parts.query.split("&")]
        if any(name.lower() == "secret" for name, _eq, _value in pairs):
            query = "&".join(
                f"{name}={MASK}" if name.lower() == "secret" else f"{name}{eq}{value}"
                for name, eq, value in pairs
            )
            shown = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
            return secret_masked(f"{shown}{sep}{fragment}")
    return None


def secrets_restored(urls: list[str], stored: list[str]) -> list[str]:
    """Webhook lines from a form that showed them masked: a line that reads as a stored line
    is shown (`secret_masked`) gets that stored line back, its secret with it (a URL changed
    or new keeps what it says)."""
    hidden: dict[str, str] = {}
    for url in stored:
        shown = secret_masked(url)
        if shown != url:
            hidden.setdefault(shown, url)
    return [hidden.get(url, url) for url in urls]


# A `#secret=` and the secret after it anywhere in a text, up to a blank or a list's separator
# (`,`, `;`, `、`, full-width too): a bot's line pasted where bots do not go, the alert emails,
# was refused there and shown back as typed (qa100).
SECRET_IN_TEXT = re.compile(r"(#secret=)([^\s,;，；、]+)", re.IGNORECASE)
_WORD_SEPARATORS = re.compile(r"([\s,;，；、]+)")


def secrets_in_text_masked(text: str) -> str:
    """`text` as shown: each `#secret=...` in it as `#secret=******`."""
    return SECRET_IN_TEXT.sub(lambda m: m.group(1) + MASK, text)


def secret_words(text: str) -> list[str]:
    """The words of `text` (a list of addresses) that hold a `#secret=...`."""
    return [word for word in _WORD_SEPARATORS.split(text) if SECRET_IN_TEXT.search(word)]


def secrets_in_text_restored(text: str, stored: str) -> str:
    """`text` from a form that showed `stored` masked (secrets_in_text_masked): each word of
    it that reads as a word of `stored` is shown gets that word back, its secret with it."""
    hidden: dict[str, str] = {}
    for word in secret_words(stored):
        hidden.setdefault(secrets_in_text_masked(word), word)
    if not hidden:
        return text
    return "".join(hidden.get(part, part) for part in _WORD_SEPARATORS.split(text))


def alert_lines(*, name: str, event: str, time_text: str) -> list[str]:
    """The job, the event in words and when, in the language active now: a bot's message
    and an alert email both hold them."""
    return [
        gettext("Job: %(name)s") % {"name": name},
        gettext("Event: %(event)s") % {"event": event},
        gettext("Time: %(time)s") % {"time": time_text},
    ]


def alert_text(
    *,
    bot: str,
    brand: str,
    title: str,
    name: str,
    event: str,
    time_text: str,
    message: str,
    link: str,
) -> str:
    """The message chat bot `bot` posts, in the language active now: the alert's title, the
    job, the event in words, when, what happened and the job's page, with no mention the bot
    would ping anyone for. The message is cut to keep the whole within MAX_TEXT_BYTES; the
    link never is."""
    head = mentions_quieted(
        bot=bot,
        text="\n".join(
            [f"[{brand}] {title}", *alert_lines(name=name, event=event, time_text=time_text)]
        ),
    )
    message = mentions_quieted(bot=bot, text=message)
    said = gettext("Message: %(message)s")
    room = MAX_TEXT_BYTES - len(f"{head}\n{said % {'message': ''}}\n{link}".encode())
    return f"{head}\n{said % {'message': _cut(message, room)}}\n{link}"


# What each bot reads as a mention in a text message: Feishu's `<at user_id="...">` (`all`: the
# whole group; spaces and case as its parser takes them), WeCom's `<@userid>` (`<@all>`).
MENTIONS = {
    FEISHU: re.compile(r"<(?=\s*at[\s>/])", re.IGNORECASE),
    WECOM: re.compile(r"<(?=\s*@)"),
}
# Zero width: the text reads as written, and the bot's parser no longer sees a tag.
ZERO_WIDTH_SPACE = "\u200b"


def mentions_quieted(*, bot: str, text: str) -> str:
    """`text` with each mention `bot` would ping someone for broken by a zero-width space
    after its `<`: a job's name or a reason from a log line holding `<at user_id="all">`
    pinged a whole Feishu group (qa59)."""
    pattern = MENTIONS.get(bot)
    return pattern.sub("<" + ZERO_WIDTH_SPACE, text) if pattern else text


def _cut(text: str, room: int) -> str:
    data = text.encode()
    if len(data) <= room:
        return text
    return data[: max(room - 3, 0)].decode(errors="ignore") + "…"


def time_shown(time: str) -> str:
    """The alert's ISO time in the console's time zone, to the second."""
    try:
        moment = datetime.fromisoformat(time)
    except ValueError:
        return time
    if timezone.is_naive(moment):
        return time
    return moment_with_zone(moment, "%Y-%m-%d %H:%M:%S")


def moment_with_zone(moment: datetime, written: str) -> str:
    """`moment` in the console's time zone, as `written` (strftime), then its zone as its UTC
    offset: "2026-12-01 18:00:00 UTC+08:00". An abbreviation is read where the reader is:
    Asia/Shanghai's CST is US Central time (UTC-6) to a reader from America, 14 hours off
    (qa70), and beside its offset ("CST (UTC+08:00)") it still said two things, one of them
    wrong to some (copy edit). UTC itself is said as UTC. The console's zone even when sent
    while a user's page is answered (jobs.time_zones): mails and chat bots go to many people."""
    local = timezone.localtime(moment, timezone.get_default_timezone())
    offset = local.strftime("%:z")
    zone = "UTC" if offset == "+00:00" else "UTC" + offset
    return f"{local.strftime(written)} {zone}"


@dataclass
class BotRequest:
    """What to send a bot: extra query parameters (DingTalk's signature) and the JSON body."""

    query: dict[str, str]
    body: dict[str, Any]


def bot_request(*, bot: str, text: str, secret: str, now: float | None = None) -> BotRequest:
    """The request for `bot` carrying `text`, signed with `secret` if one is given."""
    now = time.time() if now is None else now
    if bot == FEISHU:
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
        if secret:
            # Feishu: seconds; HMAC-SHA256 keyed with "timestamp\nsecret" over nothing.
            stamp = str(int(now))
            key = f"{stamp}\n{secret}".encode()
            body["timestamp"] = stamp
            body["sign"] = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
        return BotRequest(query={}, body=body)
    if bot == SLACK:
        return BotRequest(query={}, body={"text": slack_escaped(text)})
    body = {"msgtype": "text", "text": {"content": text}}
    query: dict[str, str] = {}
    if bot == DINGTALK and secret:
        # DingTalk: milliseconds; HMAC-SHA256 keyed with the secret over "timestamp\nsecret",
        # base64, then URL-encoded in the query.
        stamp = str(int(now * 1000))
        digest = hmac.new(secret.encode(), f"{stamp}\n{secret}".encode(), hashlib.sha256).digest()
        query = {"timestamp": stamp, "sign": base64.b64encode(digest).decode()}
    return BotRequest(query=query, body=body)


def slack_escaped(text: str) -> str:
    """`text` as Slack shows it as written: its three control characters as entities (only
    those: Slack decodes no others)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def with_query(url: str, extra: dict[str, str]) -> str:
    """`url` with `extra` added to its query (values percent-encoded, `+/=` included)."""
    if not extra:
        return url
    parts = urlsplit(url)
    added = "&".join(f"{k}={quote(v, safe='')}" for k, v in extra.items())
    query = f"{parts.query}&{added}" if parts.query else added
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def answer_error(*, bot: str, response: httpx.Response, url: str) -> str | None:
    """Why the bot did not post the message, in its own words, or None if it did.

    HTTP 3xx/4xx/5xx is a failure (a redirect is never followed, so nothing was posted); so
    is a 200 whose JSON carries a non-zero `code` (Feishu; its older answers `StatusCode`) or
    `errcode` (WeCom, DingTalk). A 200 without either (a gateway in front of a bot) is taken
    as delivered. Slack answers `ok` as text, and its
    errors as text with a 4xx (`invalid_payload`, `no_service`)."""
    text = response.text
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    code: Any = None
    words: Any = None
    if isinstance(answer, dict):
        if bot == FEISHU:
            code = answer.get("code", answer.get("StatusCode"))
            words = answer.get("msg", answer.get("StatusMessage"))
        elif bot in (WECOM, DINGTALK):
            code = answer.get("errcode")
            words = answer.get("errmsg")
    failed_code = code not in (None, 0, "0")
    if response.status_code < 300 and not failed_code:
        return None
    said = f"HTTP {response.status_code}"
    if failed_code:
        label = "code" if bot == FEISHU else "errcode"
        said += f", {label} {_scrubbed(str(code), url)}"
    detail = words if words is not None else (text if answer is None else "")
    if detail:
        said += f": {_scrubbed(str(detail), url)}"
    return f"{BOT_NAMES[bot]}: {said}"[:MAX_ANSWER_CHARS]


def _scrubbed(text: str, url: str) -> str:
    """`text` on one line, without the hook's tokens (its path's parts, its query's values)
    or its secret: a bot may quote the URL it was called at."""
    base, secret = split_secret(url)
    parts = urlsplit(base)
    tokens = [p for p in parts.path.split("/") if len(p) >= 16]
    tokens += [v for values in parse_qs(parts.query).values() for v in values if len(v) >= 4]
    if secret:
        tokens.append(secret)
    out = " ".join(text.split())
    for token in sorted(tokens, key=len, reverse=True):
        out = out.replace(token, MASK)
    return out
