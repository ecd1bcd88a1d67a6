"""Shared mechanics of adapters for checkpoints released as a plain folder outside the hub (Google Drive
releases of Genomics-FM and DeepGene): the files the folder must hold, a weights-only state dict with an
explicit, checked key mapping onto GENEB's module, and a `tokenizers` tokenizer file behind the token engine.

The folder is the registry's `source.path` (`source.kind: local`, or external weights resolved by `model_weights`). What the folder must hold, by adapter:
`config.json` (the authors' `save_pretrained` config), one weight file (`model.safetensors`, or a pickled
`pytorch_model.bin` read with `torch.load(weights_only=True)`, never a full unpickle) and `tokenizer.json`
(a `tokenizers` file). A missing file is a ModelLoadError naming the model, the file and where to get it.

Key mapping: each checkpoint tensor name is mapped onto the module's own names by removing the authors'
wrapper prefix (`bert.`, `roformer.`); tensors the module expects but the checkpoint lacks, and checkpoint
tensors the module does not use outside the heads allow-list of `geneb.encoders.loading.checkpoint_keys`
(`cls.` = the masked-LM head, `pooler.`, ...), are WeightsNotLoadedError naming the model and the tensors.
A shape that does not fit is a ModelLoadError naming the tensor and both shapes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from geneb.core.errors import ModelLoadError
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.encoders.loading.checkpoint_keys import check_loading_info
from geneb.encoders.loading.hf_load import PICKLE_WEIGHTS_ONLY, SAFETENSORS
from geneb.registry.files import weights_hash
from geneb.registry.settings import ExtractionSettings

log = logging.getLogger(__name__)

CONFIG_NAME = "config.json"
TOKENIZER_NAME = "tokenizer.json"
#: weight files read, in order of preference (safetensors first: no unpickling at all)
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")


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
    for name in WEIGHT_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return dict(load_file(str(path))), SAFETENSORS
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - re-raised naming the model and the file
            raise ModelLoadError(
                f"model {model}: cannot read {path} weights-only ({type(err).__name__}: {err}); a pickle that holds "
                "more than tensors is refused: convert it to model.safetensors"
            ) from err
        if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ModelLoadError(f"model {model}: {path} does not hold a flat state dict of tensors")
        return dict(state), PICKLE_WEIGHTS_ONLY
    raise ModelLoadError(f"model {model}: no weight file ({' or '.join(WEIGHT_NAMES)}) in {folder}; {get}")


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
    WeightsNotLoadedError (geneb.encoders.loading.checkpoint_keys) for missing or unused tensors and ModelLoadError for a
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
            log.warning("model %s: %s sets padding %s; overridden (GENEB pads)", self.model_id, path, tok.padding)
            tok.no_padding()
        if tok.truncation:
            log.warning(
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
