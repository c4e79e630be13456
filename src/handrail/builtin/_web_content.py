"""web_fetch's handling of a response body: content types, charsets, HTML to markdown or text.

Text is recognised from the `Content-Type` header (`text/*`, JSON, XML, scripts...), or, with
no header, from the absence of NUL bytes. The charset comes from a byte-order mark, then the
header, then a `<meta>` or XML declaration, else UTF-8, widened as browsers widen it (a latin-1
page is really windows-1252). HTML is converted with `html-to-markdown`, dropping scripts,
styles, navigation, asides, footers and hidden elements.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HTML_TYPES",
    "Format",
    "body_excerpt",
    "convert_html",
    "detect_charset",
    "is_text_type",
    "looks_binary",
    "looks_html",
    "parse_content_type",
    "read_capped",
]

Format = Literal["markdown", "text", "raw"]
"""How web_fetch returns a page: HTML converted to markdown or plain text, or the raw body."""

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
"""Content types converted to markdown or text."""

_EXCERPT_CHARS = 300
_SNIFF_BYTES = 8192
_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-sh",
        "application/x-httpd-php",
        "application/sql",
        "application/graphql",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-www-form-urlencoded",
        "application/x-ndjson",
        "application/jsonl",
        "application/rtf",
    }
)
# Labels browsers decode with a wider codec than Python's codec of the same name (WHATWG
# Encoding): latin-1 pages really are windows-1252, gb2312 pages really are GBK, and so on.
_WIDER_CODECS = {
    "iso8859-1": "cp1252",
    "latin-1": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
}
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:+-]+)""")
_LOOKS_HTML = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.I | re.S
)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Site chrome that is not the page's content. The converter's own preprocessing removes the
# site header and navigation menus; these simple selectors remove the rest (it matches simple
# selectors only, so an article's own <header> with its title is kept).
_EXCLUDED = [
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "aside",
    "footer",
    "svg",
    "[role=navigation]",
    "[role=banner]",
    "[role=contentinfo]",
    "[role=complementary]",
]


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The (decoded) body up to `limit` bytes, and whether more was left unread."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > limit:
            chunks.append(chunk[: limit - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def parse_content_type(header: str) -> tuple[str, str | None]:
    """`text/html; charset=UTF-8` -> (`text/html`, `UTF-8`)."""
    mime, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return mime.strip().lower(), charset


def is_text_type(mime: str) -> bool:
    """Is this content type text (returned), rather than binary (refused)?"""
    return (
        mime.startswith("text/")
        or mime in _TEXT_APPLICATION_TYPES
        or mime.endswith(("+json", "+xml"))
    )


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label (widened as browsers do), or None if unknown."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip()).name
    except LookupError:
        return None
    return _WIDER_CODECS.get(name, name)


def detect_charset(body: bytes, declared: str | None, markup: bool) -> tuple[str, str]:
    """(codec, where it came from): BOM, header, meta / XML declaration, else UTF-8."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, "bom"
    codec = _codec(declared)
    if codec is not None:
        return codec, "header"
    if markup:
        head = body[:_SNIFF_BYTES]
        for pattern in (_XML_ENCODING, _META_CHARSET):
            m = pattern.search(head)
            codec = _codec(m.group(1).decode("ascii")) if m else None
            if codec is not None:
                # A page cannot declare UTF-16 in ASCII-compatible markup; browsers read UTF-8.
                return ("utf-8" if codec.startswith("utf-16") else codec), "meta"
    return "utf-8", "default"


def convert_html(html: str, fmt: Format, base_url: str | None) -> str:
    """HTML as markdown or plain text, site chrome dropped; links resolved against `base_url`."""
    from html_to_markdown import ConversionOptions, PreprocessingOptions, convert

    options = ConversionOptions(
        output_format="plain" if fmt == "text" else "markdown",
        exclude_selectors=list(_EXCLUDED),
        preprocessing=PreprocessingOptions(enabled=True, remove_navigation=True, remove_forms=True),
        extract_metadata=False,
        inline_data_media="alt_text_only",  # a base64 image is noise to a model
        base_url=base_url,
    )
    return (convert(html, options).content or "").strip()


def looks_binary(body: bytes) -> bool:
    """Does a body without a content type look binary (a NUL byte near its start)?"""
    return b"\x00" in body[:_SNIFF_BYTES]


def looks_html(body: bytes) -> bool:
    """Does the body start like an HTML document (doctype, `<html>`, `<head>` or `<body>`)?"""
    return bool(_LOOKS_HTML.match(body[:1024]))


def body_excerpt(body: bytes, content_type: str) -> str:
    """The start of a body as one line of text (HTML converted), for an error message."""
    mime, declared = parse_content_type(content_type)
    if mime and not is_text_type(mime):
        return ""
    is_html = mime in HTML_TYPES or looks_html(body)
    encoding, _ = detect_charset(body, declared, is_html)
    decoded = body.decode(encoding, errors="replace")
    if is_html:
        try:
            decoded = convert_html(decoded, "text", None)
        except Exception:
            decoded = re.sub(r"<[^>]*>", " ", decoded)
    flat = " ".join(decoded.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"
