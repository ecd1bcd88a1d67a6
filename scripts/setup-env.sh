#!/usr/bin/env bash
# Create .venv (if missing) and install GENEB into it. Sourced by quickstart.sh and test.sh.
# torch is pinned first: this machine carries the CPU build of torch 2.13.0 on disk, and a bare `torch`
# requirement with nothing installed would pull a multi-GB CUDA build. The package's own requirement is a
# range that 2.13.0 satisfies, so pip installs nothing more for it. Everything else comes at the exact versions of
# envs/geneb-constraints.txt (the default env as tested), so a new upstream release changes nothing here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet "torch==${GENEB_TORCH_VERSION:-2.13.0}"
python -m pip install --quiet -c envs/geneb-constraints.txt -e ".[test]"
