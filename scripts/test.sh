#!/usr/bin/env bash
# README command 2: set up and run the test suite (what CI runs through .ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/setup-env.sh
python -m pytest -q "$@"
