"""Loading weights: transformers checkpoints read safely, checkpoint key checks, folder models from outside
the hub and random-init twins' networks.

Which checkpoint tensors may be left out of a loaded model, and which may be left unused.

`from_pretrained(..., output_loading_info=True)` reports the tensors the model class expects but the files
lack (`missing_keys`) and the tensors in the files the class has no place for (`unexpected_keys`). Both can
mean the embeddings are not the checkpoint's (docs/footguns.md, "Checkpoint tensors"):

* missing: those weights would be random. Only the pooler head may be missing (never used for hidden states).
* unused: a config that declares fewer layers than the checkpoint holds (trained blocks silently dropped), or
  another model class than the one trained. Only the heads on top of the backbone, which hidden-state
  embeddings never use, may be left unused: `_UNUSED_HEAD_PREFIXES` (the masked-LM head `lm_head.` of ESM/NT,
  Caduceus and causal LMs, BERT's pretraining heads `cls.` (`cls.predictions.`, `cls.seq_relationship.`), the
  `pooler.`, the sequence-classification heads `classifier.` and `score.` (Mistral-DNA's fine-tuned
  checkpoints), and the question-answering head `qa_outputs.`), plus buffers older checkpoints saved that are
  recomputed, never trained (`_UNUSED_BUFFER_NAMES`: position ids, rotary `inv_freq`, GPT-2's `masked_bias`).

Loading a transformers checkpoint safely: which weight format is read and how (a pickled file is
unpickled weights-only, or refused), registry overrides of config values applied without editing the files,
and library errors raised while the model is built turned into errors that name the model and the fix
(docs/footguns.md, "Model loading"). Used by `geneb.encoders.families.hf`.

Shared mechanics of adapters for checkpoints released as a plain folder outside the hub (Google Drive
releases of Genomics-FM and DeepGene): the files the folder must hold, a weights-only state dict with an
explicit, checked key mapping onto GENEB's module, and a `tokenizers` tokenizer file behind the token engine.

The folder is the registry's `source.path` (`source.kind: local`, or external weights resolved by `model_weights`). What the folder must hold, by adapter:
`config.json` (the authors' `save_pretrained` config), one weight file (`model.safetensors`, or a pickled
`pytorch_model.bin` read with `torch.load(weights_only=True)`, never a full unpickle) and `tokenizer.json`
(a `tokenizers` file). A missing file is a ModelLoadError naming the model, the file and where to get it.

Key mapping: each checkpoint tensor name is mapped onto the module's own names by removing the authors'
wrapper prefix (`bert.`, `roformer.`); tensors the module expects but the checkpoint lacks, and checkpoint
tensors the module does not use outside the heads allow-list of `geneb.encoders.loading`
(`cls.` = the masked-LM head, `pooler.`, ...), are WeightsNotLoadedError naming the model and the tensors.
A shape that does not fit is a ModelLoadError naming the tensor and both shapes.

Building a random-init twin's network (`geneb.registry.families`): the model's own class from its configuration,
with seeded random weights, in place of `from_pretrained`. The weights are never read.

Loading weights: transformers folders, checkpoint key checks, folder models.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.registry.python_entry import weights_hash
from geneb.registry.spec import ExtractionSettings

#: missing checkpoint tensors under these prefixes are harmless: the pooler head is never used here
_IGNORABLE_MISSING_PREFIXES = ("pooler.",)
#: unused checkpoint tensors under these prefixes are heads on top of the backbone (never used for embeddings)
_UNUSED_HEAD_PREFIXES = ("lm_head.", "cls.", "pooler.", "classifier.", "score.", "qa_outputs.")
#: unused tensors with one of these last name components are recomputed buffers, not trained weights
_UNUSED_BUFFER_NAMES = ("position_ids", "inv_freq", "masked_bias")


def _is_allowed_unused(key: str) -> bool:
    return key.startswith(_UNUSED_HEAD_PREFIXES) or key.rsplit(".", 1)[-1] in _UNUSED_BUFFER_NAMES


def check_loading_info(
    missing_keys: Iterable[str], unexpected_keys: Iterable[str], *, model: str, model_class: str
) -> list[str]:
    """Raise WeightsNotLoadedError for tensors the class expects that the checkpoint lacks (outside
    IGNORABLE_MISSING_PREFIXES), or for checkpoint tensors the class does not use outside the allow-list
    (UNUSED_HEAD_PREFIXES, UNUSED_BUFFER_NAMES), naming the model, the class, the count and the first tensors.
    Returns the allowed unused tensors (sorted), for the log."""
    missing = sorted(k for k in missing_keys if not k.startswith(_IGNORABLE_MISSING_PREFIXES))
    if missing:
        raise WeightsNotLoadedError(
            f"model {model}: {len(missing)} tensors the {model_class} class expects are not in the "
            f"checkpoint (e.g. {missing[:3]}); they would be random. Wrong model class or missing remote code?"
        )
    unexpected = sorted(unexpected_keys)
    unused = [k for k in unexpected if not _is_allowed_unused(k)]
    if unused:
        raise WeightsNotLoadedError(
            f"model {model}: {len(unused)} checkpoint tensors are not used by the {model_class} class "
            f"(e.g. {unused[:5]}); the model would run without them (a config declaring fewer layers than the "
            f"checkpoint holds, or the wrong model class?). Only heads under {list(_UNUSED_HEAD_PREFIXES)} may be "
            "left unused (geneb.encoders.loading)"
        )
    return unexpected


#: the weight formats an HDF5 record can name (`weights_format` attribute)
_SAFETENSORS = "safetensors"
PICKLE_WEIGHTS_ONLY = "pickle-weights-only"
#: pickled weight files transformers reads (torch.load), in its order of preference after safetensors
_PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
_SAFETENSORS_NAMES = ("model.safetensors", "model.safetensors.index.json")


def weights_format(where: str, revision: str | None) -> str:
    """SAFETENSORS when the checkpoint has safetensors weights (transformers then reads those), else
    PICKLE_WEIGHTS_ONLY (a pickled `pytorch_model.bin`, read with `torch.load(weights_only=True)`). A local
    folder is listed; a hub snapshot is asked for its safetensors files without raising (a file that cannot be
    found counts as absent: the pickled path then loads weights-only, which is safe either way)."""
    local = Path(where)
    if local.is_dir():
        return _SAFETENSORS if any(local.glob("*.safetensors")) else PICKLE_WEIGHTS_ONLY
    from transformers.utils import cached_file

    for name in _SAFETENSORS_NAMES:
        found = cached_file(
            where,
            name,
            revision=revision,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
        )
        if found:
            return _SAFETENSORS
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


def _release_kwargs(kwargs: dict[str, Any], where: str) -> dict[str, Any]:
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

            for name in _PICKLE_NAMES[:1]:
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
        kwargs = _release_kwargs(kwargs, where)
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


_log = logging.getLogger(__name__)

CONFIG_NAME = "config.json"
TOKENIZER_NAME = "tokenizer.json"
#: weight files read, in order of preference (safetensors first: no unpickling at all)
_WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")


def model_folder(settings: ExtractionSettings, *, get: str) -> Path:
    """The checkpoint folder of the entry: a `source.kind: local` folder, or the folder external or downloaded
    weights resolved to (`model_weights` in the config; geneb.registry.weights). get: where the weights come from
    (named in the error). Raises ModelLoadError naming the model when there is no folder or it does not exist."""
    src = settings.source
    if not src.folder:
        raise ModelLoadError(
            f"model {settings.model}: needs a local checkpoint folder (model_weights: {{{settings.model}: "
            f"/path/to/folder}} in the config, or source.kind: local); got source {src.as_dict()}. Weights: {get}"
        )
    folder = Path(src.folder)
    if not folder.is_dir():
        raise ModelLoadError(f"model {settings.model}: checkpoint folder {folder} does not exist. Weights: {get}")
    return folder


def require_file(folder: Path, name: str, *, model: str, get: str) -> Path:
    """`folder / name`, or ModelLoadError naming the model, the file, the folder and `get` (where to get it)."""
    path = folder / name
    if not path.is_file():
        raise ModelLoadError(f"model {model}: {name} is missing from {folder}; {get}")
    return path


def read_json(path: Path, *, model: str) -> dict[str, Any]:
    """A JSON object file, or ModelLoadError naming the model and the file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"model {model}: cannot read {path} as JSON ({err})") from err
    if not isinstance(data, dict):
        raise ModelLoadError(f"model {model}: {path} is not a JSON object")
    return data


def read_state_dict(folder: Path, *, model: str, get: str) -> tuple[dict[str, torch.Tensor], str]:
    """(checkpoint tensors by name, weight format) from the folder's first file of WEIGHT_NAMES: safetensors, or
    a pickled file read with `torch.load(weights_only=True)` (a pickle holding anything but tensors and plain
    containers is refused). Raises ModelLoadError naming the model when there is no weight file or it cannot be
    read; `get` says where the weights come from."""
    for name in _WEIGHT_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return dict(load_file(str(path))), _SAFETENSORS
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - re-raised naming the model and the file
            raise ModelLoadError(
                f"model {model}: cannot read {path} weights-only ({type(err).__name__}: {err}); a pickle that holds "
                "more than tensors is refused: convert it to model.safetensors"
            ) from err
        if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ModelLoadError(f"model {model}: {path} does not hold a flat state dict of tensors")
        return dict(state), PICKLE_WEIGHTS_ONLY
    raise ModelLoadError(f"model {model}: no weight file ({' or '.join(_WEIGHT_NAMES)}) in {folder}; {get}")


def load_mapped(
    module: torch.nn.Module,
    state: Mapping[str, torch.Tensor],
    *,
    prefix: str,
    model: str,
    recomputed: tuple[str, ...] = (),
) -> list[str]:
    """Load checkpoint `state` into `module` by the explicit mapping "checkpoint name minus `prefix`" = module
    name (a name without the prefix stays as it is: heads such as `cls.predictions.*`). recomputed: module
    tensors a checkpoint may leave out because the module computes them itself (a sinusoidal table). Raises
    WeightsNotLoadedError (geneb.encoders.loading) for missing or unused tensors and ModelLoadError for a
    shape that does not fit, each naming the model and the tensors. Returns the unused head tensors (for the
    log)."""
    mapped = {(k[len(prefix) :] if k.startswith(prefix) else k): v for k, v in state.items()}
    own = module.state_dict()
    missing = [k for k in own if k not in mapped and k not in recomputed]
    unexpected = [k for k in mapped if k not in own]
    heads = check_loading_info(missing, unexpected, model=model, model_class=type(module).__name__)
    bad = [
        f"{k} {tuple(v.shape)} (module {tuple(own[k].shape)})"
        for k, v in mapped.items()
        if k in own and v.shape != own[k].shape
    ]
    if bad:
        raise ModelLoadError(
            f"model {model}: {len(bad)} checkpoint tensors do not fit the shapes config.json gives "
            f"{type(module).__name__} (e.g. {bad[:3]}); config.json is not this checkpoint's"
        )
    module.load_state_dict({k: v for k, v in mapped.items() if k in own}, strict=False)
    return heads


class FolderTokenizerEncoder(TokenModelEncoder):
    """A TokenModelEncoder whose tokenizer is a `tokenizers` file (`tokenizer.json`) in the checkpoint folder.

    Subclasses return a `LoadedNetwork` whose `tokenizer` is a `tokenizers.Tokenizer` (`_open_tokenizer`) and whose
    `details["folder"]` is the checkpoint folder; this class tokenizes without special
    tokens (GENEB adds them per chunk), records each token's character span (so letters dropped without a
    token are seen), names token texts, and switches off padding/truncation baked into the file."""

    def _open_tokenizer(self, path: Path) -> Any:
        """The `tokenizers.Tokenizer` of `path`, with file-level padding and truncation switched off (logged).
        Raises ModelLoadError naming the model when the file does not parse."""
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(path))
        except Exception as err:  # noqa: BLE001 - re-raised naming the model and the file
            raise ModelLoadError(f"model {self.model_id}: {path} is not a tokenizers file ({err})") from err
        if tok.padding:
            _log.warning("model %s: %s sets padding %s; overridden (GENEB pads)", self.model_id, path, tok.padding)
            tok.no_padding()
        if tok.truncation:
            _log.warning(
                "model %s: %s sets truncation %s; overridden (GENEB chunks)", self.model_id, path, tok.truncation
            )
            tok.no_truncation()
        return tok

    def token_id(self, token: str, tokenizer: Any = None) -> int:
        """The id of `token` in `tokenizer`'s vocabulary (default: the loaded one); ModelLoadError naming the model
        when it has none."""
        found = (self.tokenizer if tokenizer is None else tokenizer).token_to_id(token)
        if found is None:
            raise ModelLoadError(f"model {self.model_id}: the tokenizer has no {token} token")
        return int(found)

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        encs = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        self._offsets = [list(e.offsets) for e in encs]
        return [list(e.ids) for e in encs]

    def _token_texts(self, ids: list[int]) -> list[str] | None:
        return [str(self.tokenizer.id_to_token(int(i))) for i in ids]

    def _folder_identity(self) -> dict[str, Any]:
        """The identity entries of a checkpoint folder (`loaded.details["folder"]`): path, weights hash and format,
        tokenizer, model class."""
        folder = self.loaded.details["folder"]
        return {
            "name_or_path": str(folder),
            "weights_sha256": weights_hash(folder),
            "weights_format": self.weights_format,
            "tokenizer": "tokenizers.Tokenizer (tokenizer.json)",
            "tokenizer_vocab_size": int(self.tokenizer.get_vocab_size(with_added_tokens=True)),
            "model_class": type(self.model).__name__,
        }


def random_init_network(
    auto_cls: Any,
    where: str,
    config: Any,
    *,
    model: str,
    seed: int,
    config_kwargs: Mapping[str, Any],
    dtype: torch.dtype,
) -> Any:
    """`auto_cls.from_config(config)` after `torch.manual_seed(seed)`: the class's own weight initialisation
    (transformers' `_init_weights`, or the remote code's), so one seed and one torch version give one set of
    weights. config: the checkpoint's configuration with the registry's overrides, or None to read it from
    `where` (`AutoConfig.from_pretrained(where, **config_kwargs)`: revision, trust_remote_code). Returns the
    network in `dtype`. Raises ModelLoadError naming the model when the class cannot be built from its
    configuration."""
    from transformers import AutoConfig

    try:
        if config is None:
            config = AutoConfig.from_pretrained(where, **config_kwargs)
        torch.manual_seed(int(seed))
        network = auto_cls.from_config(config, trust_remote_code=bool(config_kwargs.get("trust_remote_code")))
    except (AttributeError, TypeError, ValueError, KeyError, OSError) as err:
        first = str(err).splitlines()[0][:300] if str(err) else ""
        raise ModelLoadError(
            f"model {model}: its random-init twin cannot be built from the configuration of {where} "
            f"({type(err).__name__}: {first})"
        ) from err
    return network.to(dtype)


def state_sha256(network: Any) -> str:
    """sha256 over the network's state dict (names, dtypes, shapes and bytes, in name order): the identity of
    a twin's random weights (the checkpoint's weight files are not what runs)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(network.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        if t.numel():
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
