#!/usr/bin/env bash
# README command 1: set up and run the main job (13 tasks x 5 local encoders, geneb-paper protocol).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/setup-env.sh
snakemake --cores "${GENEB_CORES:-2}" "$@"
