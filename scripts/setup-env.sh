#!/usr/bin/env bash
# Create .venv (if missing) and install GENEB into it. Sourced by quickstart.sh and test.sh.
# torch is pinned first: this machine carries the CPU build of torch 2.13.0 on disk, and a bare `torch`
# requirement with nothing installed would pull a multi-GB CUDA build. The package's own requirement is a
# range that 2.13.0 satisfies, so pip installs nothing more for it. Everything else comes at the exact versions of
# envs/geneb-constraints.txt (the default env as tested), so a new upstream release changes nothing here.
#
# A new .venv is a copy of a template venv kept in $GENEB_VENV_CACHE (default ~/.cache/geneb-venv), one per
# (constraints file, pyproject.toml, torch version, python): pip unpacks and compiles about 2.5 GB (about 75-95 s
# on 2 cores) once per machine and key, and a fresh clone then takes seconds (hard links where the cache is on the
# same file system; nothing writes into an installed file in place: pip and Python replace files). The copy's
# scripts are pointed at .venv, and GENEB is installed again (editable, no dependencies) from this checkout.
# GENEB_VENV_CACHE=0 builds .venv in place, as before.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
TORCH="torch==${GENEB_TORCH_VERSION:-2.13.0}"
CACHE=${GENEB_VENV_CACHE:-$HOME/.cache/geneb-venv}

_install_into_active_venv() {
    python -m pip install --quiet --upgrade pip
    python -m pip install --quiet "$TORCH"
    python -m pip install --quiet -c envs/geneb-constraints.txt -e ".[test]"
}

# _retarget_venv VENV OLD NEW: the scripts of VENV (shebangs, activate) name NEW where they name OLD
_retarget_venv() {
    grep -rlIF --null "$2" "$1/bin" | xargs -0 --no-run-if-empty sed -i "s|$2|$3|g"
}

if [ -x .venv/bin/python ]; then
    . .venv/bin/activate
    _install_into_active_venv
elif [ "$CACHE" = 0 ]; then
    "$PYTHON" -m venv .venv
    . .venv/bin/activate
    _install_into_active_venv
else
    key=$({ cat envs/geneb-constraints.txt pyproject.toml; echo "$TORCH"; "$PYTHON" -c 'import sys; print(sys.version)'; } \
        | sha256sum | cut -c1-16)
    template="$CACHE/venv-$key"
    if [ ! -f "$template/.geneb-template-complete" ]; then
        # built once in a temporary folder beside it, renamed when complete (a killed build leaves no template)
        mkdir -p "$CACHE"
        building="$CACHE/.tmp-venv-$key-$$"
        rm -rf "$building"
        "$PYTHON" -m venv "$building"
        (
            . "$building/bin/activate"
            _install_into_active_venv
        )
        _retarget_venv "$building" "$building" "$template"
        touch "$building/.geneb-template-complete"
        rm -rf "$template"
        mv "$building" "$template"
    fi
    cp -al "$template" .venv 2>/dev/null || { rm -rf .venv && cp -a "$template" .venv; }
    rm -f .venv/.geneb-template-complete
    _retarget_venv .venv "$template" "$PWD/.venv"
    . .venv/bin/activate
    # the template's editable GENEB points at the checkout that built it: point it at this one
    python -m pip install --quiet --no-deps -e .
fi
