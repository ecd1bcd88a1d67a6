"""How an extraction runs: its execution options, the batch plan of a token model, and the record of the
load-time checks.

The execution knobs of an extraction as one typed object: `ExecutionOptions`, built from the config's
`execution:` section.

Every default is the config schema's (`workflow/schemas/config.schema.yaml`, `properties.execution`), read
through `geneb.core.paths.load_schema`: no default is repeated here, so a knob's default changes in one place.
Execution knobs never change a vector (README, "Other configurations"), so none of them is in the cache key.

The load-time checks record: a model's load-time probes pass once, and every later load of the same model
under the same settings takes the record instead of running them again.

A token-level encoder probes its model when it loads (geneb.encoders.engine.checks: vocabulary, maximum
length, padding invariance). The record of a pass is stored atomically beside the model's embeddings,
`resources/embeddings/<model>/<settings hash>/load_checks.json`. The folder is the settings hash, which
holds the model's identity (a hub commit, or a local folder's content fingerprint) and every extraction
setting, so a changed model or setting has no record and probes again. Within the folder a record counts
only when the loaded encoder's identity (special tokens, maximum length, padding, dtypes: what the probes
depend on) and the versions of the packages that tokenize and run it are the ones that passed; otherwise
the probes run again and the record is replaced. A failed probe raises and writes nothing. Every HDF5
file records the sha256 of the record it relied on (`load_checks_sha256`).

The batch plan of a token model: a fixed budget per device class by default (`execution.batch_tokens:
by_device`, `DEVICE_BUDGETS`), or one chosen by measurement on a CPU (`execution.batch_tokens: auto`).

The default, `by_device`, is a table, not a timing: every machine of a device class batches a task the same way
(the same rows in the same forward passes), so two CPUs compute the same sums in the same order and differ only
by their kernels (docs/performance.md, "Agreement across machines"). Its CPU budget is the one bench/extraction.py
measured closest to each model's best plan for the three model sizes it sweeps (docs/performance.md, "Extraction
at realistic sizes": the default's rate against the best plan's).

On a CPU the best batch depends on the model: bench/extraction.py's sweep put an NT-v2-50M-sized transformer at
88.5% of the matmul rate with batches of 8 and 50% with batches of 64 (HyenaDNA-small-sized: 64% and 31%),
while a tiny model runs faster in larger batches (per-batch overhead). A fixed default cannot serve all three.
Under `auto`, the first load of a model on a CPU embeds a fixed sample of random sequences twice per candidate
token budget (`_CANDIDATES`, padded tokens per batch), takes the one of least process CPU time, and records it in
`batch_plan.json` beside the load-checks record (`geneb.extract.batch_plan`), so later loads of the model on the
same CPU model, thread count and packages reuse it without probing. On CUDA (and for encoders without token
batches, e.g. k-mer counts) `auto` means no budget: batches of `batch_size`.

The budget is an execution knob: it is never part of the settings hash or the cache key, and it changes no
vector beyond the batch-invariance tolerance (the load-time padding-invariance check vouches for that; a test
compares the probed plan's vectors with fixed batches').
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from geneb.core.integrity import write_text_atomic
from geneb.core.paths import load_schema, schema_problems
from geneb.core.provenance import canonical_json, package_versions, stable_hash


def _execution_schema() -> dict[str, Any]:
    """The JSON schema of the config's `execution:` section (a copy; every property carries its default)."""
    return dict(load_schema("config")["properties"]["execution"])


@dataclass(frozen=True)
class ExecutionOptions:
    """How extraction jobs run (docs/hpc.md): one field per property of the schema's `execution` section.

    device: cpu, cuda or auto. batch_size: chunks per forward pass; batch_tokens: padded tokens per forward
    pass instead ("by_device", the default: the fixed budget of the device class, geneb.extract.batch_plan.DEVICE_BUDGETS;
    None: batch_size; "auto": measured once per model on a CPU, geneb.extract.batch_plan). threads: torch intra-op
    threads. hdf5_locking: auto, on or off.
    env_route: conda or venv; env_dir: where the venvs are (None: $GENEB_ENV_DIR, else .geneb/envs).
    weights_dir: the cache of weights from outside the hub. model_server / model_server_idle_s (seconds): one
    model load per node and model. probe_worker / probe_worker_idle_s (seconds): the warm probe worker.
    load_checks: record or every_load (geneb.extract.step.load_model).
    """

    device: str
    batch_size: int
    batch_tokens: int | str | None
    threads: int
    hdf5_locking: str
    env_route: str
    env_dir: str | None
    weights_dir: str
    model_server: bool
    probe_worker: bool
    probe_worker_idle_s: float
    load_checks: str
    model_server_idle_s: float

    @classmethod
    def from_config(cls, execution: Mapping[str, Any] | None = None) -> ExecutionOptions:
        """The options of a config's `execution:` mapping (None or {}: every default), absent keys taking the
        schema's defaults. Raises ValueError listing every problem the schema finds (an unknown knob, a value of
        the wrong type or outside its enum)."""
        schema = _execution_schema()
        given = dict(execution or {})
        problems = schema_problems(given, schema)
        if problems:
            raise ValueError("execution options: " + "; ".join(problems))
        defaults = {name: prop["default"] for name, prop in schema["properties"].items()}
        return cls(**{**defaults, **given})

    @classmethod
    def of(cls, execution: ExecutionOptions | Mapping[str, Any] | None) -> ExecutionOptions:
        """`execution` itself when already typed, else `from_config(execution)`."""
        return execution if isinstance(execution, ExecutionOptions) else cls.from_config(execution)

    def as_dict(self) -> dict[str, Any]:
        """The options as the config mapping they came from (JSON-ready; `from_config(as_dict())` == self)."""
        return dataclasses.asdict(self)


_log = logging.getLogger(__name__)

#: the record's file name, in the folder of the model's embeddings under one settings hash
LOAD_CHECKS_FILE = "load_checks.json"
#: the record's layout version; a record of another layout is probed again
_SCHEMA_VERSION = 1
#: packages whose versions a record is bound to (tokenization and the forward pass)
_CHECKED_PACKAGES = ("torch", "transformers", "tokenizers")


@dataclass(frozen=True)
class LoadChecksRecord:
    """A passed set of load-time probes.

    model, settings_hash: the registry entry and its extraction-settings hash. identity_sha256: 12-hex hash
    of the loaded encoder's `identity()`. packages: versions of CHECKED_PACKAGES. checks: the probes that
    ran and passed, in order (empty for a family without load-time probes, e.g. k-mer counts).
    """

    model: str
    settings_hash: str
    identity_sha256: str
    packages: dict[str, str]
    checks: tuple[str, ...]
    schema_version: int = _SCHEMA_VERSION

    def as_json(self) -> str:
        """The record as canonical JSON (sorted keys), the form its sha256 is taken of."""
        return canonical_json({**asdict(self), "checks": list(self.checks)})

    def sha256(self) -> str:
        """12-hex sha256 of `as_json()`; HDF5 files record it as `load_checks_sha256`."""
        return stable_hash(json.loads(self.as_json()))


def expected(model: str, settings_hash: str, identity: dict[str, Any], checks: tuple[str, ...]) -> LoadChecksRecord:
    """The record a load of `model` under `settings_hash` with encoder `identity` would need (or write)."""
    versions = package_versions(_CHECKED_PACKAGES)
    return LoadChecksRecord(
        model=model,
        settings_hash=settings_hash,
        identity_sha256=stable_hash(identity),
        packages={name: versions[name] for name in _CHECKED_PACKAGES},
        checks=tuple(checks),
    )


def read_record(path: str | Path) -> LoadChecksRecord | None:
    """The record at `path`, or None when there is none. A file that is not a record of this layout (edited
    by hand, another GENEB version) is logged and treated as absent, so the probes run again and replace it."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw["checks"] = tuple(raw["checks"])
        record = LoadChecksRecord(**raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as err:
        _log.warning("load-checks record %s is not readable (%s); the load-time probes run again", path, err)
        return None
    if record.schema_version != _SCHEMA_VERSION:
        _log.warning("load-checks record %s has layout %s; the probes run again", path, record.schema_version)
        return None
    return record


def write_record(path: str | Path, record: LoadChecksRecord) -> None:
    """Write `record` to `path` atomically (a killed write leaves no record under the final name)."""
    write_text_atomic(path, json.dumps(json.loads(record.as_json()), indent=1, sort_keys=True) + "\n")


_log = logging.getLogger(__name__)

#: the execution.batch_tokens value that asks for a measured budget
_AUTO = "auto"
#: the execution.batch_tokens value (the schema's default) that takes the budget of the device class from
#: DEVICE_BUDGETS
_BY_DEVICE = "by_device"
#: padded tokens per forward pass under `by_device`, per device class (`table_budget`; on a CPU a model of
#: CPU_LARGE_PARAMS parameters or more takes CPU_LARGE_BUDGET). From bench/extraction.py's sweep (docs/performance.md,
#: "Extraction at realistic sizes"): 2048 is 98-99% of the best plan's rate for a HyenaDNA-small-sized model (3.2M
#: parameters) and the real Mistral-DNA-1M, where a 50M transformer ran at 69-80% of its best (52-61% MFU against
#: 75%); 1024 gives that transformer 93% (70.3% MFU; 32.8% with batches of 64) but costs the tiny models on whole
#: tasks, whose length-sorted batches of 64 pad little (Mistral-DNA-1M on gue_emp_h3__devtrain: 9.4 CPU s at 1024,
#: 7.3 s at 2048, 7.6 s with batches of 64). cuda: 65536, docs/hpc.md's starting point for a model of up to a few
#: hundred million parameters in bfloat16 (out-of-memory step-downs keep the results). A fixed table of the device
#: class and the model's parameter count (the same on every machine), never a timing.
DEVICE_BUDGETS: dict[str, int] = {"cpu": 2048, "cuda": 65536}
#: on a CPU, models with at least this many parameters (all of them, `n_parameters`) take CPU_LARGE_BUDGET
_CPU_LARGE_PARAMS = 20_000_000
_CPU_LARGE_BUDGET = 1024
#: the record's file name, beside load_checks.json
_BATCH_PLAN_FILE = "batch_plan.json"
#: candidate budgets (padded tokens per forward pass) the probe times
_CANDIDATES: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
#: the probe's sample: PROBE_ROWS random sequences of PROBE_NT bases, lengths spread geometrically between the two
#: like the rows of a mixed-length task (seeded; the same sample at every load), each candidate timed PROBE_REPEATS
#: times, interleaved, the least CPU time kept (a neighbour's burst hits every candidate alike)
_PROBE_ROWS = 32
_PROBE_NT = (100, 1000)
_PROBE_REPEATS = 2


def _cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else platform.machine(): a plan measured on one CPU is not reused
    on another."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _probe_sequences(rows: int = _PROBE_ROWS, nt: tuple[int, int] = _PROBE_NT, seed: int = 0) -> list[str]:
    """`rows` random ACGT sequences with lengths spread geometrically over `nt` (numpy default_rng(seed)): the
    probe's fixed sample."""
    rng = np.random.default_rng(seed)
    lengths = np.geomspace(nt[0], nt[1], rows).round().astype(int)
    return ["".join(np.array(list("ACGT"))[rng.integers(0, 4, n)]) for n in lengths]


def probe_budget(
    encoder: Any, candidates: Sequence[int] = _CANDIDATES, sequences: Sequence[str] | None = None
) -> tuple[int, dict[int, float]]:
    """Embed `sequences` (default `_probe_sequences()`) PROBE_REPEATS times per candidate budget, interleaved, and
    return (the budget of least process CPU time, {budget: its least CPU seconds}). The encoder's batch_size,
    batch_tokens and progress are restored afterwards. Ties go to the smaller budget."""
    seqs = list(sequences if sequences is not None else _probe_sequences())
    saved = (encoder.batch_size, encoder.batch_tokens, encoder.progress)
    encoder.progress = False
    seconds: dict[int, float] = {}
    try:
        encoder.batch_tokens = int(candidates[0])
        encoder.embed(seqs[:4])  # warm-up: first-call allocations and lazy initialisation
        for _ in range(_PROBE_REPEATS):
            for budget in candidates:
                encoder.batch_tokens = int(budget)
                t0 = time.process_time()
                encoder.embed(seqs)
                spent = time.process_time() - t0
                seconds[int(budget)] = min(seconds.get(int(budget), spent), spent)
    finally:
        encoder.batch_size, encoder.batch_tokens, encoder.progress = saved
    best = min(seconds, key=lambda b: (seconds[b], b))
    return best, seconds


def _key(model: str, settings_hash: str, identity_sha256: str) -> dict[str, Any]:
    import torch

    versions = package_versions(_CHECKED_PACKAGES)
    return {
        "model": model,
        "settings_hash": settings_hash,
        "identity_sha256": identity_sha256,
        "packages": {name: versions[name] for name in _CHECKED_PACKAGES},
        "cpu": _cpu_model(),
        "threads": int(torch.get_num_threads()),
        "candidates": list(_CANDIDATES),
        "probe": [_PROBE_ROWS, list(_PROBE_NT), _PROBE_REPEATS],
    }


def _read_plan(path: Path, key: dict[str, Any]) -> int | None:
    """The recorded budget at `path` when its key is `key`, else None (no record, another CPU, thread count,
    package version or encoder identity, or an unreadable file)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return int(raw["batch_tokens"]) if raw.get("key") == key else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as err:
        _log.warning("batch-plan record %s is not readable (%s); the probe runs again", path, err)
        return None


def token_batches(encoder: Any) -> bool:
    """Whether `encoder` plans token batches (the token-model engine, whose load-time probes include padding
    invariance), read through the Encoder protocol's `load_check_names`."""
    return "padding_invariance" in tuple(encoder.load_check_names)


def _device_class(device: str) -> str:
    """The DEVICE_BUDGETS class of a torch device string: "cuda" for "cuda" / "cuda:<i>", "cpu" for "cpu"; "auto"
    is the class torch would pick (cuda when available). Raises ValueError for another device."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    kind = str(device).split(":", 1)[0]
    if kind not in DEVICE_BUDGETS:
        raise ValueError(f"device {device!r}: no batch budget for it (device classes: {sorted(DEVICE_BUDGETS)})")
    return kind


def n_parameters(encoder: Any) -> int:
    """The parameter count of the encoder's network, 0 for an encoder without one (the engine reads its own
    encoders' networks: `geneb.encoders.engine.batching.network_parameters`)."""
    from geneb.encoders.engine.batching import network_parameters

    return network_parameters(encoder)


def table_budget(device: str, n_params: int) -> int:
    """The `by_device` budget (padded tokens per forward pass) of a model of `n_params` parameters on `device`:
    CPU_LARGE_BUDGET on a CPU from CPU_LARGE_PARAMS parameters, else DEVICE_BUDGETS of the device class
    (`_device_class`; ValueError for an unknown device)."""
    kind = _device_class(device)
    return _CPU_LARGE_BUDGET if kind == "cpu" and n_params >= _CPU_LARGE_PARAMS else DEVICE_BUDGETS[kind]


def resolve_batch_tokens(
    encoder: Any,
    batch_tokens: int | str | None,
    *,
    device: str,
    checks_dir: str | Path,
    model: str,
    settings_hash: str,
    identity_sha256: str,
) -> int | None:
    """The budget a load on `device` uses: `batch_tokens` itself when it is an integer or None; under BY_DEVICE
    (the default) `table_budget` of the encoder's resolved device and parameter count, or None for an encoder
    without token batches; under AUTO, None off the CPU
    (cuda, or auto with CUDA present) or for an encoder without token batches (`token_batches`), else the recorded budget of this model on this CPU (see the module
    docstring), probing and recording it when there is none; None (batch_size), recording nothing, when the probe
    fails (a model that refuses the sample's rows under long_policy: error). Raises ValueError for another string."""
    if batch_tokens is None or isinstance(batch_tokens, int):
        return batch_tokens
    if batch_tokens == _BY_DEVICE:
        if not token_batches(encoder):
            return None
        from geneb.encoders.engine.batching import encoder_device

        return table_budget(encoder_device(encoder, device), n_parameters(encoder))
    if batch_tokens != _AUTO:
        raise ValueError(
            f"batch_tokens {batch_tokens!r}: expected a positive integer, null, {_BY_DEVICE!r} or {_AUTO!r}"
        )
    if device not in ("cpu", "auto") or not token_batches(encoder):
        return None
    if device == "auto":
        import torch

        if torch.cuda.is_available():
            return None
    path = Path(checks_dir) / _BATCH_PLAN_FILE
    key = _key(model, settings_hash, identity_sha256)
    found = _read_plan(path, key)
    if found is not None:
        _log.info("model %s: batch plan batch_tokens=%d measured earlier (%s)", model, found, path)
        return found
    try:
        best, seconds = probe_budget(encoder)
    except Exception as err:  # noqa: BLE001 - a sample the model refuses (long_policy: error) must not stop a load
        _log.warning("model %s: batch-plan probe failed (%s); batches of batch_size, nothing recorded", model, err)
        return None
    record = {"key": key, "batch_tokens": best, "cpu_seconds": {str(b): round(s, 4) for b, s in seconds.items()}}
    write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    _log.info(
        "model %s: batch plan batch_tokens=%d chosen by a timed probe %s; recorded in %s", model, best, seconds, path
    )
    return best
