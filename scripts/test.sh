#!/usr/bin/env bash
# README command 2: set up and run the style gates and the test suite (what CI runs through .ci/run).
#
# As root on a Debian machine it also installs what the system-level tests need and starts it: Debian's
# chromium (the HTML report is opened headless) and a real single-node Slurm (slurm-wlm, munge), stopped
# again on exit. Elsewhere those tests skip with their reason. GENEB_TEST_SYSTEM=0 skips this step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/setup-env.sh

if [ "${GENEB_TEST_SYSTEM:-1}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    if ! command -v chromium >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
    tests/slurm/cluster.sh start
    trap 'tests/slurm/cluster.sh stop' EXIT
fi

# Style gates first (cheap, and a finding fails the run): lint, formatting, Snakemake formatting and lint.
start=$SECONDS
ruff check --quiet src workflow tools bench tests
ruff format --check --quiet src workflow tools bench tests
snakefmt --check Snakefile workflow
snakemake --lint
echo "style gates: passed in $((SECONDS - start)) s"

# Then, side by side (each mostly one core or the disk, minutes each when nothing is cached), the type checker over
# the whole package (`[tool.mypy] files` in pyproject.toml: src/geneb) and the three non-default envs built from
# their files: transformers4 (transformers 4.x) and hyena, in which tests/workflow/test_env_workflow.py runs real
# extractions through the workflow (venv route), and lucaone, whose package tests/encoders/families/test_lucaone.py
# runs the LucaOne stand-in with. Both are cached outside the checkout, so that a second run on this machine (a fresh
# clone too) takes seconds: mypy's cache in $MYPY_CACHE_DIR (default ~/.cache/geneb-mypy), the envs under
# $GENEB_ENV_DIR (default ~/.cache/geneb-envs, reused while the env file and pyproject.toml are unchanged).
# GENEB_TEST_ENVS=0 skips the envs (the env tests then build them or skip, naming the command). Each step's output
# is kept in a log and printed when it fails.
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$HOME/.cache/geneb-mypy}"
export GENEB_ENV_DIR="${GENEB_ENV_DIR:-$HOME/.cache/geneb-envs}"
logs=$(mktemp -d)
steps=(mypy)
if [ "${GENEB_TEST_ENVS:-1}" = 1 ]; then
    steps+=(transformers4 hyena lucaone)
fi
pids=()
for step in "${steps[@]}"; do
    (
        start=$SECONDS
        if [ "$step" = mypy ]; then
            mypy >"$logs/$step.log" 2>&1
            echo "mypy: passed in $((SECONDS - start)) s (cache $MYPY_CACHE_DIR)"
        else
            python -m geneb.cli env build "$step" >"$logs/$step.log" 2>&1
            echo "env $step: ready in $((SECONDS - start)) s under $GENEB_ENV_DIR"
        fi
    ) &
    pids+=($!)
done
failed=0
for i in "${!steps[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "${steps[$i]} failed:" >&2
        cat "$logs/${steps[$i]}.log" >&2
        failed=1
    fi
done
rm -rf "$logs"
[ "$failed" = 0 ] || exit 1

# pytest on $GENEB_TEST_WORKERS pytest-xdist workers (default 2, one per core here; 0 runs in this process), each
# test file on one worker (--dist loadfile: a file's module fixtures are built once, and the Slurm tests, all in
# tests/cases/test_workflow_slurm.py, never run beside each other). `--cov` first: line coverage of src/geneb by coverage.py, subprocesses
# (workflow jobs, model servers, the xdist workers) included ([tool.coverage] in pyproject.toml), reported after.
# Files are handed out in collection order (--no-loadscope-reorder; xdist would otherwise sort them by test count),
# which tests/conftest.py makes longest first: the long real runs start at once, the short tests fill in around
# them. The 25 slowest tests are listed at the end of every run (docs/testing.md).
workers=(-n "${GENEB_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25)
if [ "${1:-}" = --cov ]; then
    shift
    rm -f .coverage .coverage.*
    status=0
    python -m coverage run -m pytest -q "${workers[@]}" "$@" || status=$?
    python -m coverage combine --quiet
    python -m coverage report --precision=1 --skip-covered --sort=cover | tail -n 60
    # against the coverage recorded before the suite was reorganised (docs/testing.md): at most one point lower, no
    # module from covered to uncovered
    python -m coverage json --quiet -o .coverage.json
    python tools/coverage_compare.py .coverage.json || status=$?
    exit "$status"
fi
python -m pytest -q "${workers[@]}" "$@"
