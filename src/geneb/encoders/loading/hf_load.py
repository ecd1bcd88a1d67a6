"""Loading a transformers checkpoint safely: which weight format is read and how (a pickled file is
unpickled weights-only, or refused), registry overrides of config values applied without editing the files,
and library errors raised while the model is built turned into errors that name the model and the fix
(docs/footguns.md, "Model loading"). Used by `geneb.encoders.families.hf`.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from geneb.core.errors import ModelLoadError

#: the weight formats an HDF5 record can name (`weights_format` attribute)
SAFETENSORS = "safetensors"
PICKLE_WEIGHTS_ONLY = "pickle-weights-only"
#: pickled weight files transformers reads (torch.load), in its order of preference after safetensors
PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
SAFETENSORS_NAMES = ("model.safetensors", "model.safetensors.index.json")


def weights_format(where: str, revision: str | None) -> str:
    """SAFETENSORS when the checkpoint has safetensors weights (transformers then reads those), else
    PICKLE_WEIGHTS_ONLY (a pickled `pytorch_model.bin`, read with `torch.load(weights_only=True)`). A local
    folder is listed; a hub snapshot is asked for its safetensors files without raising (a file that cannot be
    found counts as absent: the pickled path then loads weights-only, which is safe either way)."""
    local = Path(where)
    if local.is_dir():
        return SAFETENSORS if any(local.glob("*.safetensors")) else PICKLE_WEIGHTS_ONLY
    from transformers.utils import cached_file

    for name in SAFETENSORS_NAMES:
        found = cached_file(
            where,
            name,
            revision=revision,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
        )
        if found:
            return SAFETENSORS
    return PICKLE_WEIGHTS_ONLY


def config_with_overrides(where: str, overrides: Mapping[str, Any] | None, *, model: str, **kwargs: Any) -> Any:
    """The checkpoint's config (AutoConfig, same kwargs as the model's load) with the registry's
    `load.config_overrides` set on it; None when there are none (transformers reads the config itself).
    Raises ModelLoadError for a key the config does not have (a typo would otherwise be ignored)."""
    if not overrides:
        return None
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(where, **kwargs)
    for key, value in overrides.items():
        if not hasattr(config, key):
            raise ModelLoadError(
                f"model {model}: load.config_overrides names {key!r}, which the checkpoint's "
                f"{type(config).__name__} does not have; check the key against its config.json"
            )
        setattr(config, key, value)
    return config


def _hint(err: BaseException, config: Any) -> str:
    """The fix for a known library error at load time."""
    text = str(err)
    if "Padding_idx" in text or "padding_idx" in text:
        pad, vocab = getattr(config, "pad_token_id", None), getattr(config, "vocab_size", None)
        return (
            f"the config's pad_token_id {pad} is outside its embedding table of vocab_size {vocab} (an upstream "
            "config defect); set load.config_overrides: {pad_token_id: <the tokenizer's [PAD] id>} in the "
            "registry entry (the checkpoint stays as shipped)"
        )
    return (
        "a value in the checkpoint's config.json does not fit its model class; correct it with "
        "load.config_overrides in the registry entry (the files stay as shipped), or check the family"
    )


def release_kwargs(kwargs: dict[str, Any], where: str) -> dict[str, Any]:
    """`from_pretrained` keyword arguments in the spelling of the installed transformers: the envs under envs/
    pin releases from 4.29 on (geneb.core.envs). Before 4.56 the weights' dtype is `torch_dtype` (a `dtype` would
    land in the model's config); a release whose `from_pretrained` has no `weights_only` always unpickles
    weights-only itself on torch >= 1.13 (4.x `load_state_dict`), and a local pickle is read weights-only here
    first, so a file that holds more than tensors is still refused (pickle.UnpicklingError)."""
    import inspect

    import transformers
    from packaging.version import Version

    out = dict(kwargs)
    if Version(transformers.__version__) < Version("4.56") and "dtype" in out:
        out["torch_dtype"] = out.pop("dtype")
    if (
        "weights_only" in out
        and "weights_only" not in inspect.signature(transformers.PreTrainedModel.from_pretrained).parameters
    ):
        del out["weights_only"]
        local = Path(where)
        if local.is_dir():
            import torch

            for name in PICKLE_NAMES[:1]:
                if (local / name).is_file():
                    torch.load(local / name, map_location="cpu", weights_only=True)
    return out


def load_model(
    auto_cls: Any, where: str, *, model: str, fmt: str, config: Any, config_kwargs: Mapping[str, Any], **kwargs: Any
) -> tuple[Any, Any]:
    """`auto_cls.from_pretrained(where, output_loading_info=True, **config_kwargs, **kwargs)` -> (model,
    loading info); config_kwargs (trust_remote_code, revision, ...) also read the config for the hint. Pickled
    weights unpickled weights-only (`weights_only=True`: tensors and plain containers, no code). Raises
    ModelLoadError naming the model and the fix for a raw library assertion or config error while the model
    is built, and for a pickled file that holds more than weights (refused, not unpickled)."""
    kwargs.update(config_kwargs)
    if config is not None:
        kwargs["config"] = config
    if fmt == PICKLE_WEIGHTS_ONLY:
        kwargs["weights_only"] = True
    try:
        kwargs = release_kwargs(kwargs, where)
        return auto_cls.from_pretrained(where, output_loading_info=True, **kwargs)
    except pickle.UnpicklingError as err:
        raise ModelLoadError(
            f"model {model}: its pickled weight file holds objects other than tensors, which weights-only "
            f"unpickling refuses ({str(err).splitlines()[0]}); GENEB never unpickles arbitrary objects. Convert "
            "the checkpoint to safetensors on a trusted machine (save_pretrained(..., safe_serialization=True))"
        ) from err
    except (AssertionError, IndexError, KeyError, TypeError, ValueError) as err:
        if isinstance(err, ModelLoadError):
            raise
        cfg = config
        if cfg is None:
            try:
                from transformers import AutoConfig

                cfg = AutoConfig.from_pretrained(where, **config_kwargs)
            except Exception:  # noqa: BLE001 - only for the hint; the load error is what is raised
                cfg = None
        raise ModelLoadError(
            f"model {model}: building {getattr(auto_cls, '__name__', auto_cls)} from {where} failed with "
            f"{type(err).__name__}: {err}. Fix: {_hint(err, cfg)}"
        ) from err
