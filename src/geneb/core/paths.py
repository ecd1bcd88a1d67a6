"""The one home of repository paths: where GENEB finds the files of its checkout (workflow schemas, env files,
the workflow itself) and its own package source.

GENEB is installed from its checkout (`pip install -e .`), and the workflow, its JSON schemas and the env files
live in the checkout beside `src/`, not in the package. The checkout is found once, from the package's own
location upwards (the first folder holding `workflow/schemas` and `envs`); `GENEB_REPO` names it explicitly for
an installation outside a checkout. No other module walks `__file__`'s parents.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import geneb

#: environment variable naming the GENEB checkout when the package is installed elsewhere
REPO_ENV = "GENEB_REPO"
#: the package folder (…/src/geneb)
PACKAGE_DIR = Path(geneb.__file__).resolve().parent
#: the folder that holds the package (…/src): put first on a child interpreter's PYTHONPATH
SOURCE_ROOT = PACKAGE_DIR.parent


def _is_checkout(folder: Path) -> bool:
    return (folder / "workflow" / "schemas").is_dir() and (folder / "envs").is_dir()


@functools.cache
def repo_root() -> Path:
    """The GENEB checkout: `$GENEB_REPO` when set, else the nearest folder above the package that holds
    `workflow/schemas` and `envs`. Raises FileNotFoundError naming both ways to fix it when neither is found
    (a non-editable install used outside its checkout)."""
    named = os.environ.get(REPO_ENV)
    if named:
        folder = Path(named).expanduser().resolve()
        if not _is_checkout(folder):
            raise FileNotFoundError(f"{REPO_ENV}={named} is not a GENEB checkout (no workflow/schemas and envs there)")
        return folder
    for folder in PACKAGE_DIR.parents:
        if _is_checkout(folder):
            return folder
    raise FileNotFoundError(
        f"no GENEB checkout above {PACKAGE_DIR} (a folder with workflow/schemas and envs): install GENEB from its "
        f"checkout with `pip install -e .`, or set {REPO_ENV} to the checkout"
    )


def schema_dir() -> Path:
    """The folder of the workflow's JSON schemas (`workflow/schemas`)."""
    return repo_root() / "workflow" / "schemas"


def envs_dir() -> Path:
    """The folder of the runtime environment files (`envs/<env>.yaml`)."""
    return repo_root() / "envs"


def default_env_cache() -> Path:
    """Where built venvs live unless `$GENEB_ENV_DIR` (or `--prefix`) says otherwise: `.geneb/envs` in the
    checkout."""
    return repo_root() / ".geneb" / "envs"
