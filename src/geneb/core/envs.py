"""Runtime environments: the env files under `envs/` (one per runtime family) and their pip venvs.

Each `envs/<name>.yaml` is a conda env file (conda-forge python + a pip section) for Snakemake's own software
deployment (`--sdm conda`). The same pip section also builds a plain venv here, for sites without conda
(`geneb env build NAME`): `python -m venv`, `pip install torch==2.13.0` first (the CPU build on this machine's
disk, which uv does not see), then the pip lines with paths resolved against the env file's folder.

A venv is cached under `<cache>/<name>-<digest>` (cache: `$GENEB_ENV_DIR`, else `.geneb/envs` in the
repository), where the digest covers the env file and the `pyproject.toml` of every `-e` path it installs, so an
edited file gets a new venv and an unchanged one is reused. The venv is built in a `.tmp-*` folder beside it and
renamed when complete, with its record `geneb-env.json` written last: a killed build leaves only a `.tmp-*`
folder, which nothing trusts. `python_for_env(name)` is the interpreter of a built env (docs/hpc.md,
"Environments"). Torch-free; the registry reads the env files while Snakemake builds the DAG.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import geneb.core.paths as paths
from geneb.core.yamlio import safe_load as load_yaml

#: the repository's env folder (GENEB is installed from its checkout, pip -e)
ENVS_DIR = paths.envs_dir()
#: the env of a registry entry without an `env:` field
DEFAULT_ENV = "geneb"
#: where built venvs live unless $GENEB_ENV_DIR (or --prefix) says otherwise
_DEFAULT_CACHE = paths.default_env_cache()
_ENV_DIR_VAR = "GENEB_ENV_DIR"
#: installed first in every venv: the CPU build on this machine's disk (README)
_TORCH_FIRST = "torch==2.13.0"
#: the record of a complete venv, written last
_RECORD = "geneb-env.json"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class EnvError(ValueError):
    """An env file that is missing or malformed, or a venv that is not built (the message names the fix)."""


def _canon(name: str) -> str:
    """A pip distribution name in canonical form (PEP 503: lower case, runs of -_. as one dash)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class EnvFile:
    """One env file. name: the file's stem; path; python: the conda `python=` spec ("3.11"), or None; pip:
    the pip lines as written; requirements: {canonical distribution name: requirement string} of the pip
    lines that name a package (not `-e` paths or options)."""

    name: str
    path: Path
    python: str | None
    pip: tuple[str, ...]
    requirements: Mapping[str, str]

    @property
    def transformers(self) -> str | None:
        """The exact transformers version the env pins (`transformers==X`), or None when it pins none."""
        return _pinned_version(self.requirements.get("transformers"))

    def provides(self, package: str) -> bool:
        """Whether the pip section installs the distribution `package` (any spelling of its name)."""
        return _canon(package) in self.requirements

    def editable_paths(self) -> list[Path]:
        """The folders of its `-e PATH` lines, resolved against the env file's folder."""
        out = []
        for line in self.pip:
            parts = line.split(None, 1)
            if parts[0] in ("-e", "--editable") and len(parts) == 2:
                out.append((self.path.parent / parts[1]).resolve())
        return out

    def pinning_files(self) -> list[Path]:
        """The files of its `-r FILE` / `-c FILE` lines (requirements, constraints), against its folder."""
        out = []
        for line in self.pip:
            parts = line.split(None, 1)
            if parts[0] in ("-r", "-c") and len(parts) == 2:
                out.append((self.path.parent / parts[1]).resolve())
        return out

    def digest(self) -> str:
        """12-hex digest of the env file, of each `-e` path's pyproject.toml and of each `-r`/`-c` file: the
        venv's cache name (a changed constraint makes a new venv)."""
        h = hashlib.sha256(self.path.read_bytes())
        for folder in self.editable_paths():
            project = folder / "pyproject.toml"
            h.update(project.read_bytes() if project.is_file() else b"")
        for pinned in self.pinning_files():
            h.update(pinned.read_bytes() if pinned.is_file() else b"")
        return h.hexdigest()[:12]


def _pinned_version(requirement: str | None) -> str | None:
    """X of a requirement string `name==X` (extras allowed, nothing else), else None."""
    if not requirement:
        return None
    m = re.fullmatch(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*==\s*([0-9][A-Za-z0-9.+!-]*)\s*", requirement)
    return m.group(2) if m else None


def env_names(envs_dir: str | Path = ENVS_DIR) -> list[str]:
    """The env names under `envs_dir` (the stems of its *.yaml files), sorted."""
    return sorted(p.stem for p in Path(envs_dir).glob("*.yaml"))


def read_env(name: str, envs_dir: str | Path = ENVS_DIR) -> EnvFile:
    """The env file `envs_dir/<name>.yaml`, parsed. Raises EnvError naming the env and the fix for an unknown
    name (with the known ones) and for a file without a pip section, or with pip lines that are not text."""
    envs_dir = Path(envs_dir)
    path = envs_dir / f"{name}.yaml"
    if not _NAME.match(str(name)) or not path.is_file():
        known = env_names(envs_dir)
        raise EnvError(
            f"env {name!r} has no file {path}; known envs: {', '.join(known) or 'none'} (add {path} or name one of them)"
        )
    try:
        doc = load_yaml(path.read_text())
    except yaml.YAMLError as err:
        raise EnvError(f"env {name}: {path} is not valid YAML ({str(err).splitlines()[0]})") from err
    deps = doc.get("dependencies") if isinstance(doc, dict) else None
    if not isinstance(deps, list):
        raise EnvError(f"env {name}: {path} has no `dependencies:` list (a conda env file with a pip section)")
    python, pip = None, None
    for dep in deps:
        if isinstance(dep, str) and re.match(r"^python\s*[=<>]", dep):
            python = re.sub(r"^python\s*=*\s*", "", dep).strip()
        elif isinstance(dep, dict) and "pip" in dep:
            pip = dep["pip"]
    if not isinstance(pip, list) or not pip or not all(isinstance(line, str) for line in pip):
        raise EnvError(f"env {name}: {path} needs a `pip:` list of requirement lines under dependencies")
    requirements = {}
    for line in pip:
        line = line.strip()
        if line.startswith("-"):
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if m:
            requirements[_canon(m.group(1))] = line
    return EnvFile(name, path, python, tuple(p.strip() for p in pip), requirements)


# ---- venvs ----------------------------------------------------------------------------------------------------


def _cache_dir(prefix: str | Path | None = None) -> Path:
    """The folder venvs are cached under: `prefix`, else $GENEB_ENV_DIR, else `.geneb/envs` in the repository."""
    return Path(prefix or os.environ.get(_ENV_DIR_VAR) or _DEFAULT_CACHE).expanduser().resolve()


def _env_prefix(env: EnvFile, prefix: str | Path | None = None) -> Path:
    """Where the venv of `env` lives (built or not): `<cache>/<name>-<digest>`."""
    return _cache_dir(prefix) / f"{env.name}-{env.digest()}"


def _python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def _read_record(venv: Path) -> dict[str, Any] | None:
    """The record of a complete venv (name, digest, installed versions), or None when it is not complete."""
    try:
        record = json.loads((venv / _RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and _python_of(venv).exists() else None


def python_for_env(name: str, *, envs_dir: str | Path = ENVS_DIR, prefix: str | Path | None = None) -> Path:
    """The interpreter of the built venv of env `name`. Raises EnvError naming `geneb env build NAME` when it is
    not built for the current env file (saying so when only a venv of an older version of the file exists),
    and for an unknown env."""
    env = read_env(name, envs_dir)
    venv = _env_prefix(env, prefix)
    if _read_record(venv) is not None:
        return _python_of(venv)
    older = sorted(p.name for p in _cache_dir(prefix).glob(f"{name}-*") if _read_record(p) is not None)
    why = f" (only for an older {env.path.name}: {', '.join(older)})" if older else ""
    where = f" --prefix {_cache_dir(prefix)}" if prefix else ""
    raise EnvError(
        f"env {name} is not built under {_cache_dir(prefix)} for the current {env.path}{why}; run "
        f"`geneb env build {name}{where}` (or set ${_ENV_DIR_VAR} to the folder where it was built)"
    )


def _pip_lines(env: EnvFile) -> list[str]:
    """The env's pip lines with `-e`/`-r`/`-c` paths and local paths made absolute (against its folder)."""
    out = []
    for line in env.pip:
        parts = line.split(None, 1)
        if parts[0] in ("-e", "--editable", "-r", "-c") and len(parts) == 2:
            out.append(f"{parts[0]} {(env.path.parent / parts[1]).resolve()}")
        elif line.startswith((".", "/")):
            out.append(str((env.path.parent / line).resolve()))
        else:
            out.append(line)
    return out


def _check_python(env: EnvFile, python: str) -> None:
    if not env.python:
        return
    got = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    want = env.python.split("=")[-1].strip()
    if not got or not (got == want or got.startswith(want + ".") or want.startswith(got + ".")):
        raise EnvError(
            f"env {env.name}: {env.path.name} asks for python {env.python}, but {python} is python {got or '?'}; "
            f"run `geneb env build {env.name} --python <a python {want} interpreter>`"
        )


#: what a venv's record lists: the versions of these distributions (and of each required one), read in the venv
_VERSIONS = """import json, sys
from importlib import metadata
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def _installed_versions(python: str | Path, packages: Iterable[str]) -> dict[str, str | None]:
    """{distribution: version or None} as installed for the interpreter `python`."""
    res = subprocess.run([str(python), "-c", _VERSIONS, *packages], capture_output=True, text=True, check=False)
    if res.returncode:
        raise EnvError(f"{python} could not report its installed packages: {res.stderr.strip()[-500:]}")
    return json.loads(res.stdout)


def build_env(
    name: str,
    *,
    envs_dir: str | Path = ENVS_DIR,
    prefix: str | Path | None = None,
    python: str | None = None,
    say: Callable[[str], None] = print,
) -> Path:
    """Build (or reuse) the venv of env `name` and return its folder `<cache>/<name>-<digest>`.

    Reused when a complete venv of the current env file exists. Otherwise: `python -m venv` in a `.tmp-*`
    folder of the cache, `pip install torch==2.13.0`, `pip install` of the pip lines (`_pip_lines`), the
    installed versions recorded in `geneb-env.json` (written last), console-script shebangs pointed at the
    final folder, then a rename to the final folder. python: the interpreter to make it from (default: this
    one); it must match the env file's `python=` spec. Raises EnvError (unknown env, wrong python, a failed pip
    step, naming the env and the step); the temporary folder is removed on any failure.
    """
    env = read_env(name, envs_dir)
    final = _env_prefix(env, prefix)
    if _read_record(final) is not None:
        say(f"env {name}: up to date at {final}")
        return final
    python = python or sys.executable
    _check_python(env, python)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        steps = [
            ("venv", [python, "-m", "venv", str(tmp)]),
            ("torch", [str(_python_of(tmp)), "-m", "pip", "install", "--disable-pip-version-check", _TORCH_FIRST]),
            ("pip section", [str(_python_of(tmp)), "-m", "pip", "install", "--disable-pip-version-check", *_args(env)]),
        ]
        for step, cmd in steps:
            say(f"env {name}: {step}: {' '.join(cmd[2:]) if step != 'venv' else tmp}")
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode:
                tail = (res.stderr.strip() or res.stdout.strip())[-1500:]
                raise EnvError(f"env {name}: the {step} step failed (exit {res.returncode}):\n{tail}")
        versions = _installed_versions(_python_of(tmp), ["torch", *env.requirements])
        missing = [p for p, v in versions.items() if v is None]
        if missing:
            raise EnvError(f"env {name}: pip finished but {', '.join(missing)} is not installed")
        _retarget(tmp, final)
        record = {"env": name, "digest": env.digest(), "file": str(env.path), "versions": versions}
        (tmp / _RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        try:
            os.rename(tmp, final)
        except OSError:
            if _read_record(final) is None:  # not another build finishing first: a leftover folder
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"env {name}: built at {final}")
    return final


def _args(env: EnvFile) -> list[str]:
    out = []
    for line in _pip_lines(env):
        out += line.split(None, 1) if line.startswith("-") else [line]
    return out


def _retarget(tmp: Path, final: Path) -> None:
    """Point the venv's scripts (shebangs, activate) at `final`, where it will live after the rename."""
    old, new = str(tmp), str(final)
    for script in (tmp / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        try:
            text = script.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if old in text:
            script.write_text(text.replace(old, new))


def env_status(
    names: Iterable[str] | None = None, *, envs_dir: str | Path = ENVS_DIR, prefix: str | Path | None = None
) -> list[dict[str, Any]]:
    """One row per env: name, file, digest, built (bool), where (the venv folder, built or to be built), and the
    transformers version it pins."""
    rows = []
    for name in names if names is not None else env_names(envs_dir):
        env = read_env(name, envs_dir)
        venv = _env_prefix(env, prefix)
        rows.append(
            {
                "env": name,
                "file": str(env.path),
                "digest": env.digest(),
                "transformers": env.transformers,
                "built": _read_record(venv) is not None,
                "where": str(venv),
            }
        )
    return rows
