"""The page an MCP server asks a person to open (elicitation, URL mode), as it must be shown.

A hostile server may send a look-alike: `https://google.com@evil.example/` goes to
evil.example, and `аpple.com` is spelled with a Cyrillic `а`. `Page.of` finds the host the
browser would really go to (in ASCII: punycode for other letters) and the warnings a person
should read, and decides whether handrail opens it at all: only http and https, only a URL whose
ASCII characters RFC 3986 allows (a backslash ends the host for a browser, not for Python's
`urlsplit`), at most `MAX_URL` long. The text it returns is the server's:
whoever draws it `clean`s it.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from urllib.parse import urlsplit

from rich.style import Style
from rich.text import Text

from ...display import terminal_text
from ._glyphs import Glyphs, clean

__all__ = ["MAX_URL", "Page"]

MAX_URL = 2048
"""Longer URLs are shown cut and never opened."""
_URL_CHARS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")
"""What RFC 3986 lets a URL hold; anything else (a backslash, a quote, a space) is read
differently by different browsers."""


@dataclass(frozen=True, slots=True)
class Page:
    """A URL as the person must see it before opening it, and whether handrail will."""

    url: str
    host: str
    """The host the browser would go to, in ASCII (punycode for other letters)."""
    warnings: tuple[str, ...]
    openable: bool

    @classmethod
    def of(cls, url: str) -> Page:
        """Read `url`: its real host, and what about it a person should be told."""
        warnings: list[str] = []
        too_long = len(url) > MAX_URL
        if too_long:
            url = url[:MAX_URL]
        spelled = terminal_text(url, multiline=False) != url or any(c.isspace() for c in url)
        # Letters beyond ASCII are IDNA in a host and percent-encoded elsewhere, alike in every
        # browser (a look-alike host is warned about below); ASCII outside RFC 3986 is not.
        odd = sorted({c for c in url if c.isascii() and c not in _URL_CHARS}) if not spelled else []
        try:
            # As a browser reads an http(s) URL: a backslash ends the host like a slash does.
            parts = urlsplit(url.replace("\\", "/"))
            name = parts.hostname or ""
        except ValueError:
            parts, name = None, ""
        host = _ascii_host(name)
        if too_long:
            warnings.append(f"The URL is longer than {MAX_URL} characters: it will not be opened.")
        if spelled:
            warnings.append("The URL holds characters no URL can hold: it will not be opened.")
        elif odd:
            shown = " ".join(repr(c) for c in odd[:5])
            warnings.append(
                f"The URL holds characters a URL may not ({shown}), which browsers read in "
                "different ways: it will not be opened."
            )
        elif parts is None or parts.scheme.lower() not in ("http", "https") or not name:
            warnings.append(
                "handrail opens only http and https pages: this one will not be opened."
            )
        if parts is not None and "@" in parts.netloc and name:
            before = parts.netloc.rpartition("@")[0]
            warnings.append(f"The text before @ ({before}) is not the site: the page is on {host}.")
        if host != name:
            warnings.append(
                f"The host is written with letters that are not ASCII ({name}): it may imitate "
                "another site's name."
            )
        openable = (
            not spelled
            and not odd
            and not too_long
            and parts is not None
            and parts.scheme.lower() in ("http", "https")
            and bool(name)
        )
        return cls(url=url, host=host, warnings=tuple(warnings), openable=openable)

    def shown(self, g: Glyphs) -> Text:
        """The URL spelled out on its own, its host underlined."""
        text = clean(terminal_text(self.url, multiline=False), ascii=g.ascii)
        shown = Text(text)
        start = text.find("//")
        if start >= 0:
            begin = start + 2
            end = min(
                (i for i in (text.find(c, begin) for c in "/?#") if i >= 0), default=len(text)
            )
            at = text.rfind("@", begin, end)
            begin = at + 1 if at >= 0 else begin
            colon = text.rfind(":", begin, end)
            if colon > begin and "]" not in text[colon:end]:
                end = colon
            shown.stylize(Style(bold=True, underline=True), begin, end)
        return shown


def _ascii_host(host: str) -> str:
    """`host` as DNS reads it: each label with letters other than ASCII in punycode."""
    labels: list[str] = []
    for label in host.split("."):
        if label.isascii():
            labels.append(label)
            continue
        try:
            labels.append("xn--" + label.encode("punycode").decode("ascii"))
        except UnicodeError:
            labels.append(label.encode("unicode_escape").decode("ascii"))
    return ".".join(labels)
