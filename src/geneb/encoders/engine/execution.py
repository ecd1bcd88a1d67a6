"""The execution knobs every adapter shares: settings, device (never a silent CPU fallback), batch size, the
dtype policy (progress lines: geneb.encoders.engine.progress)."""

from __future__ import annotations

from typing import Any

import torch

from geneb.registry.settings import AUTO_DTYPE, COMPUTE_DTYPES, Extraction, ExtractionSettings, SettingsLike

REDUCED_DTYPES = tuple(d for d in COMPUTE_DTYPES if d != "float32")


def resolve_device(device: str, *, model: str) -> str:
    """ "cpu", "cuda[:i]" or "auto" (cuda when available) -> a torch device string. device=cuda without CUDA
    raises RuntimeError: GENEB never falls back to CPU silently."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"model {model}: device={device} was configured but CUDA is not available; not falling back to CPU"
        )
    return device


class ExecutionKnobs:
    """The attributes `init_execution` sets, declared once for every adapter that calls it (the token-model
    engine, Enformer and its kin): settings, model_id, extraction, device, batch_size, batch_tokens, progress."""

    settings: ExtractionSettings
    model_id: str
    extraction: Extraction
    device: str
    batch_size: int
    batch_tokens: int | None
    progress: bool


def init_execution(
    encoder: ExecutionKnobs,
    settings: SettingsLike,
    *,
    device: str,
    batch_size: int,
    progress: bool,
    batch_tokens: int | None = None,
) -> None:
    """Set the attributes every adapter shares: settings (`ExtractionSettings`; a resolved mapping is typed
    here), model_id, extraction (`Extraction`), device (resolved; never a silent CPU fallback), batch_size,
    batch_tokens (None: batches of `batch_size` items; else a budget of padded tokens per batch, see
    `geneb.encoders.engine.batching.plan_token_batches`) and progress. Raises ValueError for batch_size < 1 or
    batch_tokens < 1."""
    settings = ExtractionSettings.of(settings)
    encoder.settings = settings
    encoder.model_id = settings.model
    encoder.extraction = settings.extraction
    encoder.device = resolve_device(device, model=encoder.model_id)
    if int(batch_size) < 1 or (batch_tokens is not None and int(batch_tokens) < 1):
        raise ValueError(f"model {encoder.model_id}: batch_size and batch_tokens must be >= 1")
    encoder.batch_size = int(batch_size)
    encoder.batch_tokens = None if batch_tokens is None else int(batch_tokens)
    encoder.progress = progress


def dtype_policy(extraction: Extraction, *, device: str, model: str) -> tuple[str, str, bool]:
    """(compute dtype, weights dtype, autocast?) from `dtype` and `nonfinite`.

    The workflow's settings carry a concrete dtype (`extraction.extraction_settings` resolves auto before the
    settings hash is made); settings built by hand may still say auto, which means the same here
    (`settings.AUTO_DTYPE`: float32 on CPU, bfloat16 on CUDA). A reduced compute dtype loads reduced weights,
    except under `nonfinite: retry_fp32`, which keeps float32 weights and runs under autocast so a batch with
    NaN/inf can be rerun in float32.
    """
    want = extraction.dtype
    compute = AUTO_DTYPE["cuda" if device.startswith("cuda") else "cpu"] if want == "auto" else want
    if compute not in COMPUTE_DTYPES:
        raise ValueError(f"model {model}: unknown dtype {want!r}")
    if compute == "float32":
        return compute, "float32", False
    if extraction.nonfinite == "retry_fp32":
        return compute, "float32", True
    return compute, compute, False


def to_device(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """`tensor` on `device`. On CUDA a CPU tensor goes through pinned (page-locked) host memory with
    non_blocking=True, so the copy overlaps with queued GPU work; the caller's next host read of a result
    (`.cpu()`) synchronises. Anywhere else it is `tensor.to(device)` (a no-op on CPU)."""
    if device.startswith("cuda") and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def network_parameters(encoder: Any) -> int:
    """The parameter count of an encoder's torch network (`encoder.model.parameters()`), 0 for an encoder without
    one (k-mer spectra, shortcut features, a python entry): the model size the `by_device` batch table reads
    (geneb.extract.batch_plan)."""
    model = getattr(encoder, "model", None)
    params = getattr(model, "parameters", None)
    return int(sum(int(p.numel()) for p in params())) if callable(params) else 0


def encoder_device(encoder: Any, default: str) -> str:
    """The device an encoder resolved at load (`encoder.device`, e.g. "cuda:1" for "auto"), `default` for one that
    records none."""
    return str(getattr(encoder, "device", default))
