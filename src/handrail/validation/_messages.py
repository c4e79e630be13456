"""Message catalogs for validation issues and the INVALID_ARGS text, in English and Chinese.

Every model-facing sentence about bad arguments comes from here, so both tracks read the same
and a new locale is one more dict.
"""

from __future__ import annotations

from typing import Literal

Locale = Literal["en", "zh"]

CATALOGS: dict[str, dict[str, str]] = {
    "en": {
        "invalid_json": "arguments are not valid JSON: {detail} (line {line}, column {column})",
        "surrogate": (
            "contains {escape}, half of a UTF-16 surrogate pair (a character cut in two); send "
            "the whole character, or both halves of the pair"
        ),
        "not_object": "arguments must be a JSON object, received {received}",
        "missing": "required field `{field}` is missing",
        "unknown_field": "unknown field `{field}`",
        "unknown_field_hint": "unknown field `{field}`; did you mean `{suggestion}`?",
        "unknown_field_allowed": "unknown field `{field}`; allowed fields: {allowed}",
        "type": "expected {expected}, received {received}",
        "enum": "must be one of {expected}, received {received}",
        "const": "must be {expected}, received {received}",
        "bound": "must be {expected}, received {received}",
        "length": "length must be {expected}, received {received}",
        "items": "must have {expected}, received {received}",
        "pattern": "must match the pattern {expected}, received {received}",
        "format": "must be a valid {expected}, received {received}",
        "unique": "items must be unique, received {received}",
        "multiple_of": "must be a multiple of {expected}, received {received}",
        "no_match": "does not match any allowed shape ({expected}), received {received}",
        "other": "{detail}",
        "header": "Invalid arguments for `{tool}`:",
        "footer": "Call `{tool}` again with corrected arguments.",
        "root": "(arguments)",
        "nothing": "nothing",
    },
    "zh": {
        "invalid_json": "参数不是合法的 JSON:{detail}(第 {line} 行,第 {column} 列)",
        "surrogate": (
            "含有 {escape},这是 UTF-16 代理对的一半(被截成两半的字符);"
            "请发送完整的字符,或代理对的两半"
        ),
        "not_object": "参数必须是 JSON 对象,实际收到 {received}",
        "missing": "缺少必填字段 `{field}`",
        "unknown_field": "未知字段 `{field}`",
        "unknown_field_hint": "未知字段 `{field}`;你是不是想写 `{suggestion}`?",
        "unknown_field_allowed": "未知字段 `{field}`;允许的字段:{allowed}",
        "type": "应为 {expected},实际收到 {received}",
        "enum": "必须是 {expected} 之一,实际收到 {received}",
        "const": "必须是 {expected},实际收到 {received}",
        "bound": "必须满足 {expected},实际收到 {received}",
        "length": "长度必须满足 {expected},实际收到 {received}",
        "items": "元素个数必须满足 {expected},实际收到 {received}",
        "pattern": "必须匹配正则 {expected},实际收到 {received}",
        "format": "必须是合法的 {expected},实际收到 {received}",
        "unique": "元素必须互不相同,实际收到 {received}",
        "multiple_of": "必须是 {expected} 的倍数,实际收到 {received}",
        "no_match": "不符合任何允许的形式({expected}),实际收到 {received}",
        "other": "{detail}",
        "header": "`{tool}` 的参数无效:",
        "footer": "请修正参数后重新调用 `{tool}`。",
        "root": "(参数)",
        "nothing": "无",
    },
}


def message(locale: str, key: str, **values: object) -> str:
    """Render one catalog entry; unknown locales fall back to English."""
    catalog = CATALOGS.get(locale) or CATALOGS["en"]
    return catalog[key].format(**values)
