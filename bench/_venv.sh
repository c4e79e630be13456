# Sourced by bench/run and bench/run_agent (not run on its own): creates bench/.venv when
# needed, installs the pinned peers in requirements.txt and handrail editable from the repo root.
# Sets `here`, `root` and `venv`. The caller sets `bench_cmd` (its name in messages) and
# `set -euo pipefail` first.
#
# A peer that cannot be installed is reported as "n/a (not installed)" by the benchmark; a
# handrail that cannot be installed or imported is reported as SKIPPED.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$here/.venv"
log="$venv/install.log"

say() { printf '%s: %s\n' "${bench_cmd:-bench/run}" "$*" >&2; }

pick_python() {
    local c
    for c in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
        [ -n "$c" ] || continue
        command -v "$c" >/dev/null 2>&1 || continue
        if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

if [ ! -x "$venv/bin/python" ]; then
    py="$(pick_python)" || { say "need Python >= 3.11 (set PYTHON=...)"; exit 1; }
    say "creating $venv with $py"
    "$py" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
: >"$log"  # this run's install output only

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
peers_stamp="$(hash_of "$here/requirements.txt")"
self_stamp="$(hash_of "$root/pyproject.toml")"

# Peers: all together first; if the set does not resolve, each on its own so one broken peer
# only costs its own column.
if [ "$(cat "$venv/.peers-stamp" 2>/dev/null)" != "$peers_stamp" ]; then
    say "installing peers from requirements.txt (log: $log)"
    if "${pip[@]}" install -r "$here/requirements.txt" >>"$log" 2>&1; then
        echo "$peers_stamp" >"$venv/.peers-stamp"
    else
        say "peers did not install together; trying one by one"
        while read -r req; do
            req="${req%%#*}"; req="${req// /}"
            [ -n "$req" ] || continue
            "${pip[@]}" install "$req" >>"$log" 2>&1 || say "could not install $req (column will be n/a)"
        done <"$here/requirements.txt"
    fi
fi

# handrail: editable, so later edits under src/ are picked up without reinstalling.
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
fallback_pth="$site/zz-handrail-src-fallback.pth"
if [ "$(cat "$venv/.self-stamp" 2>/dev/null)" != "$self_stamp" ] || [ -e "$fallback_pth" ] \
    || ! "$venv/bin/python" -c 'import handrail' >/dev/null 2>&1; then
    say "installing handrail (editable) from $root (log: $log)"
    if "${pip[@]}" install -e "$root" -c "$here/requirements.txt" >>"$log" 2>&1; then
        rm -f "$fallback_pth"
        echo "$self_stamp" >"$venv/.self-stamp"
    else
        say "WARNING: 'pip install -e $root' failed:"
        grep -v 'is ignored: it is neither a file nor a directory' "$log" \
            | grep -E '^ *[A-Za-z]*(Error|error)\b' | tail -n 3 >&2 || true
        # Fallback so a packaging-metadata problem does not hide the runtime's numbers: install
        # handrail's declared dependencies and put src/ on the path. The header then shows the
        # handrail version as "(no dist metadata)".
        deps="$("$venv/bin/python" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$root/pyproject.toml")"
        if [ -n "$deps" ] && printf '%s\n' "$deps" | "${pip[@]}" install -r /dev/stdin -c "$here/requirements.txt" >>"$log" 2>&1; then
            echo "$root/src" >"$fallback_pth"
            say "WARNING: using handrail from $root/src via a .pth file (not a pip install)"
        else
            say "handrail dependencies did not install either; its column will be SKIPPED"
        fi
    fi
fi
