"""Is a `sed` invocation read-only? Its options, and a small parser of sed scripts.

A sed command line is read-only when it runs with `-n` and every script only prints: no
`-i` (in place), no script file, and no command that writes a file (`w`, `s///w`) or runs a
program (`e`, `s///e`). Anything the parser does not recognise is refused.
"""

from __future__ import annotations

__all__ = ["sed_prints_only"]


def sed_prints_only(args: list[str]) -> bool:
    """Does `sed ARGS` only print (`-n`, and scripts that neither write nor run anything)?"""
    quiet = False
    scripts: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in ("quiet", "silent"):
                quiet = True
            elif name == "expression":
                if not eq:
                    if i >= len(args):
                        return False
                    value, i = args[i], i + 1
                scripts.append(value)
            elif name not in (
                "regexp-extended",
                "posix",
                "separate",
                "unbuffered",
                "null-data",
                "debug",
                "sandbox",
                "line-length",
            ):
                return False  # --in-place, --file, and anything unknown
            continue
        if a.startswith("-") and a != "-":
            for j, c in enumerate(a[1:], 1):
                if c == "n":
                    quiet = True
                elif c in "Ersuz":
                    continue
                elif c in "el":
                    value = a[j + 1 :]
                    if not value:
                        if i >= len(args):
                            return False
                        value, i = args[i], i + 1
                    if c == "e":
                        scripts.append(value)
                    break
                else:
                    return False  # -i (in place), -f (script file), anything unknown
            continue
        positional.append(a)
    if not scripts:
        if not positional:
            return False
        scripts.append(positional[0])
    return quiet and all(_sed_script_ok(s) for s in scripts)


def _sed_until(s: str, i: int, delim: str) -> int:
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == delim:
            return i + 1
        i += 1
    return -1


def _sed_address(s: str, i: int) -> int:
    n = len(s)
    if i < n and s[i].isdigit():
        while i < n and s[i].isdigit():
            i += 1
        if i < n and s[i] == "~":
            i += 1
            while i < n and s[i].isdigit():
                i += 1
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and s[i] in "/\\":
        if s[i] == "\\":
            i += 1
            if i >= n or s[i] in "\\\n":
                return -1
        i = _sed_until(s, i + 1, s[i])
        while 0 <= i < n and s[i] in "IM":
            i += 1
    return i


def _sed_delimited(s: str, i: int, parts: int) -> int:
    if i >= len(s) or s[i] in "\\\n":
        return -1
    delim = s[i]
    i += 1
    for _ in range(parts):
        i = _sed_until(s, i, delim)
        if i < 0:
            return -1
    return i


def _sed_script_ok(s: str) -> bool:
    """Does the sed script only print?

    Allowed: addresses, `p P = l q Q d D n N g G h H x z F { }`, and `s` / `y` without the
    `w` / `e` flags. Anything else (`w`, `e`, `r`, labels, text) is refused.
    """
    n, i, depth = len(s), 0, 0

    def skip_blanks(k: int) -> int:
        while k < n and s[k] in " \t":
            k += 1
        return k

    while i < n:
        c = s[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "}":
            depth -= 1
            if depth < 0:
                return False
            i += 1
            continue
        if c == "#":
            while i < n and s[i] != "\n":
                i += 1
            continue
        i = _sed_address(s, i)
        if i < 0:
            return False
        if i < n and s[i] == ",":
            i += 1
            if i < n and s[i] in "+~":
                start = i = i + 1
                while i < n and s[i].isdigit():
                    i += 1
                if i == start:
                    return False
            else:
                start = i
                i = _sed_address(s, i)
                if i <= start:
                    return False
        i = skip_blanks(i)
        if i < n and s[i] == "!":
            i = skip_blanks(i + 1)
        if i >= n:
            return False
        cmd = s[i]
        i += 1
        if cmd == "{":
            depth += 1
            continue
        if cmd in "qQlL":
            i = skip_blanks(i)
            while i < n and s[i].isdigit():
                i += 1
        elif cmd in "s":
            i = _sed_delimited(s, i, 2)
            if i < 0:
                return False
            while i < n and s[i] in "gpiImM0123456789":
                i += 1
        elif cmd == "y":
            i = _sed_delimited(s, i, 2)
            if i < 0:
                return False
        elif cmd not in "pP=dDnNgGhHxzF":
            return False
        i = skip_blanks(i)
        if i < n and s[i] not in ";\n}":
            return False
    return depth == 0
