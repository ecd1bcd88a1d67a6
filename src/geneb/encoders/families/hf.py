"""The transformers family: any `AutoModel` checkpoint, and the same loading with a language-model head for
the zero-shot LLR scorer.

The transformers adapter: any `AutoModel` checkpoint, from a hub id at a pinned revision or from a local
folder in hub-snapshot layout, through the same `from_pretrained` path. It serves the families hf-encoder,
hf-decoder, hf-ssm, hyena, caduceus and gpn (they differ only in registry defaults: causal or not, attention
mask or not, packages to import first); the policy itself is in `geneb.encoders.engine.tokenmodel`.

Loading rules (docs/footguns.md, "Model loading"):

* Remote code runs only when the registry entry says `trust_remote_code: true` and the source is pinned
  (a 40-hex hub revision, or a local folder whose files are hashed into the settings); a checkpoint whose
  config or tokenizer config carries an `auto_map` while the entry does not allow remote code is refused,
  instead of silently loading a built-in class (missing weights: the DNABERT-S reference defect; a generic
  tokenizer in place of the authors' one gives other token ids). A remote-code entry
  declares a transformers range, checked before loading (transformers version skew).
* Modules listed in `load.hide_modules_on_cpu` (triton for DNABERT-2) are unimportable while the model loads
  on CPU, which forces the remote code's pure-PyTorch path.
* Checkpoint tensors the model expects but the files lack are an error (random weights would be embedded);
  only a `pooler.` head (never used for hidden states) may be missing. Checkpoint tensors the model does not
  use are an error too (trained layers silently dropped), except the heads of `geneb.encoders.loading`'
  allow-list (`lm_head.`, `cls.`, `pooler.`, `classifier.`, `score.`, `qa_outputs.`), which are logged.
* Padding or truncation baked into the tokenizer files is switched off and logged; GENEB pads.
* Pickled weights (`pytorch_model.bin`) are unpickled weights-only or refused; `load.config_overrides` are set
  on the config before the model is built; a library error while building it names the model and the fix
  (`geneb.encoders.loading`).

A transformers checkpoint loaded WITH its language-model head, for the zero-shot LLR scorer: the same loading
path as the embedding adapter (`HFEncoder`: remote-code rules, weights-only unpickling, config overrides, the
load report's checks), with `AutoModelForMaskedLM` or `AutoModelForCausalLM` as the class.

A head whose tensors the checkpoint lacks (a fine-tuned classifier, a backbone-only export) would be randomly
initialised by transformers and score noise: the load report's missing tensors outside the backbone
(`base_model_prefix`) raise `NoLanguageHeadError`, never a silent random head. A head tied to the input
embeddings (`tie_word_embeddings`) is not reported missing by transformers and is the model's own design.
"""

from __future__ import annotations

import inspect
import json
import logging
from pathlib import Path
from typing import Any

import torch

from geneb.core.errors import RemoteCodeError, WeightsNotLoadedError
from geneb.core.provenance import REVISION
from geneb.encoders.engine.checks import SENTINEL_MAX_LENGTH, hidden_modules, import_modules, resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.encoders.loading import (
    check_loading_info,
    config_with_overrides,
    load_model,
    random_init_network,
    state_sha256,
    weights_format,
)
from geneb.registry.families import check_transformers_range, require_modules
from geneb.registry.python_entry import weights_hash
from geneb.registry.spec import ExtractionSettings, SettingsLike

_log = logging.getLogger(__name__)

#: config keys that may hold the model's maximum positions, in order of preference
_CONFIG_MAX_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length", "seq_len")
#: config keys that may hold the number of blocks, in order of preference
_CONFIG_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
#: config keys that may hold the hidden size, in order of preference
_CONFIG_HIDDEN_KEYS = ("hidden_size", "d_model", "n_embd", "hidden_dim", "embed_dim", "dim", "width")


def _special_affixes(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Ids the tokenizer adds before and after a sequence (e.g. [CLS] and [SEP]), found by encoding a probe
    sequence with and without special tokens. Raises ValueError if the bare ids are not inside the full ones."""
    probe = "ACGTACGTAC"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return list(full[:start]), list(full[start + len(bare) :])
    raise ValueError("cannot locate the sequence tokens inside the tokenizer's special-token template")


def read_config_json(
    where: str, revision: str | None, name: str = "config.json", *, required: bool = True
) -> dict[str, Any]:
    """The raw JSON file `name` (config.json, tokenizer_config.json) of a local folder or a hub snapshot (no
    class is instantiated, no code runs); {} for a missing file that is not `required`."""
    local = Path(where)
    path: Path | None
    if local.is_dir():
        path = local / name
        if not required and not path.exists():
            return {}
    else:
        from transformers.utils import cached_file

        found = cached_file(where, name, revision=revision, _raise_exceptions_for_missing_entries=required)
        path = Path(found) if found else None
    return json.loads(path.read_text()) if path is not None else {}


def _foreign_code(where: str, revision: str | None) -> set[str]:
    """auto_map entries of config.json and tokenizer_config.json that name code in another repository
    ("other/repo--modeling_x.XModel"), which transformers loads from that repository, not the model's."""
    found = set()
    for name, required in (("config.json", True), ("tokenizer_config.json", False)):
        for value in (read_config_json(where, revision, name, required=required).get("auto_map") or {}).values():
            for ref in value if isinstance(value, list) else [value]:
                if isinstance(ref, str) and "--" in ref:
                    found.add(ref)
    return found


def _position_offset(model: Any, positions: int | None) -> int:
    """How many rows of the learned position table no real token can use: RoBERTa-style embeddings (RoBERTa,
    ESM with absolute positions, ...) number positions from `padding_idx + 1`, so 514 positions allow 512
    tokens. Found structurally (a module with `padding_idx` and a `position_embeddings` table of `positions`
    rows), not by model name; 0 when there is none."""
    import torch.nn as nn

    for module in model.modules():
        table, pad = getattr(module, "position_embeddings", None), getattr(module, "padding_idx", None)
        if isinstance(table, nn.Embedding) and isinstance(pad, int) and table.num_embeddings == positions:
            return pad + 1
    return 0


class HFEncoder(TokenModelEncoder):
    """A transformers checkpoint behind the shared token-model engine.

    settings: resolved extraction settings. where/revision: override the source (used by the random-init
    builtin, which builds its folder first). Raises MissingPackageError, RemoteCodeError,
    TransformersVersionError or WeightsNotLoadedError while loading (each naming the model).
    """

    #: the transformers auto class that builds the network: the bare backbone for embeddings; a language-model
    #: head's class (`AutoModelForMaskedLM`, `AutoModelForCausalLM`) for `geneb.encoders.families.hf`
    auto_model_class = "AutoModel"

    def __init__(
        self,
        settings: SettingsLike,
        *,
        where: str | None = None,
        revision: str | None = None,
        **kwargs: Any,
    ) -> None:
        settings = ExtractionSettings.of(settings)
        src = settings.source
        resolved = where if where is not None else (src.folder or src.hub_id)
        self.revision = revision if where is not None else (src.revision if src.kind == "hub" else None)
        if not resolved:
            raise ValueError(f"model {settings.model}: no hub id or path to load from (source {src.as_dict()})")
        self.where: str = resolved
        if where is None and src.kind == "hub" and Path(self.where).exists():
            # from_pretrained prefers a local path over the hub: the pinned revision would not be what loads
            raise ValueError(
                f"model {settings.model}: a local folder {Path(self.where).resolve()} has the hub id's name; "
                f"transformers would load it instead of {self.where}@{self.revision}. Rename it, or run "
                "from another directory, or register it as a local model"
            )
        super().__init__(settings, **kwargs)

    def _load(self) -> LoadedNetwork:
        import transformers

        auto_cls = getattr(transformers, self.auto_model_class)

        load = self.settings.load
        trust = self.settings.trust_remote_code
        require_modules(self.model_id, load.requires)
        if trust:
            if not Path(self.where).is_dir() and not (self.revision and REVISION.match(self.revision)):
                raise RemoteCodeError(
                    f"model {self.model_id}: trust_remote_code needs a pinned 40-hex revision "
                    f"(got {self.revision!r}); unpinned remote code runs whatever is on main"
                )
            check_transformers_range(self.model_id, load.transformers)
        if not trust:
            for name, required in (("config.json", True), ("tokenizer_config.json", False)):
                raw = read_config_json(self.where, self.revision, name, required=required)
                if "auto_map" in raw:
                    raise RemoteCodeError(
                        f"model {self.model_id}: the checkpoint ships remote code ({name} auto_map "
                        f"{sorted(raw['auto_map'])}) but the registry entry has trust_remote_code: false; loading it "
                        "with a built-in class would leave its weights unused or tokenize differently. Set "
                        "trust_remote_code: true with a pinned revision and a transformers range."
                    )
        if trust:
            foreign = sorted(_foreign_code(self.where, self.revision))
            if foreign and not REVISION.match(str(load.code_revision or "")):
                raise RemoteCodeError(
                    f"model {self.model_id}: its auto_map takes code from another repository ({foreign[0]}), which "
                    "transformers fetches from that repository's main branch, outside the model's pinned revision and "
                    "the cache key; pin it with load.code_revision (a 40-hex commit of that repository)"
                )
        import_modules(list(load.preimport or ()))
        hide = list(load.hide_modules_on_cpu or ()) if self.device == "cpu" else []
        kwargs: dict[str, Any] = {"trust_remote_code": trust}
        if self.revision:
            kwargs["revision"] = self.revision
        if load.code_revision:
            kwargs["code_revision"] = load.code_revision
        fmt = weights_format(self.where, self.revision)
        with hidden_modules(hide):
            tokenizer = self._load_tokenizer(kwargs)
            config = config_with_overrides(self.where, load.config_overrides, model=self.model_id, **kwargs)
            twin = self.settings.twin
            if twin is not None:  # a random-init twin: the class from its configuration, seeded random weights
                model = random_init_network(
                    auto_cls,
                    self.where,
                    config,
                    model=self.model_id,
                    seed=int(twin["seed"]),
                    config_kwargs=kwargs,
                    dtype=getattr(torch, self.weights_dtype),
                )
            else:
                model, info = load_model(
                    auto_cls,
                    self.where,
                    model=self.model_id,
                    fmt=fmt,
                    config=config,
                    config_kwargs=kwargs,
                    dtype=getattr(torch, self.weights_dtype),
                )
        heads = [] if twin is not None else self._check_loading_info(model, info)
        if heads:
            _log.info("model %s: checkpoint heads not used by %s: %s", self.model_id, type(model).__name__, heads[:5])
        model = model.eval().to(self.device)
        cfg = model.config
        config_max = next((getattr(cfg, k) for k in _CONFIG_MAX_KEYS if isinstance(getattr(cfg, k, None), int)), None)
        if config_max is not None:
            offset = _position_offset(model, config_max)
            if offset:
                _log.info(
                    "model %s: positions start at padding_idx + 1: %d of %d positions usable",
                    self.model_id,
                    config_max - offset,
                    config_max,
                )
                config_max -= offset
        max_tokens = resolve_max_tokens(
            getattr(tokenizer, "model_max_length", None),
            config_max,
            self.extraction.max_tokens,
            model=self.model_id,
        )
        self._override_tokenizer_padding(tokenizer)
        prefix, suffix = _special_affixes(tokenizer)
        pad = tokenizer.pad_token_id
        vocab_size = getattr(cfg, "vocab_size", None)
        num_embeddings: int | None
        table_width: int | None
        try:
            table = model.get_input_embeddings()
            num_embeddings, table_width = int(table.num_embeddings), int(table.embedding_dim)
        except (AttributeError, NotImplementedError, TypeError):
            # no table found: the config's vocabulary size still bounds the ids (a padded table is larger)
            num_embeddings = vocab_size if isinstance(vocab_size, int) else None
            table_width = None
        local = Path(self.where)
        return LoadedNetwork(
            model=model,
            tokenizer=tokenizer,
            max_tokens=max_tokens,
            max_tokens_from="registry" if self.extraction.max_tokens is not None else "tokenizer/config",
            prefix=tuple(prefix),
            suffix=tuple(suffix),
            pad_id=int(pad) if pad is not None else 0,
            unk_id=getattr(tokenizer, "unk_token_id", None),
            hidden_size=next(
                (getattr(cfg, k) for k in _CONFIG_HIDDEN_KEYS if isinstance(getattr(cfg, k, None), int)), table_width
            ),
            vocab_size=vocab_size,
            num_embeddings=num_embeddings,
            n_layers=next(
                (getattr(cfg, k) for k in _CONFIG_LAYER_KEYS if isinstance(getattr(cfg, k, None), int)), None
            ),
            uses_attention_mask=self._takes_attention_mask(model),
            # BigBird's block-sparse attention pads to whole blocks and picks blocks by the padded length
            pad_sensitive=getattr(cfg, "attention_type", None) == "block_sparse",
            weights_format=fmt,
            # a twin's identity is its random weights, not the checkpoint's files (which it never reads)
            weights_sha256=state_sha256(model)
            if twin is not None
            else (weights_hash(local) if local.is_dir() else None),
        )

    def _check_loading_info(self, model: Any, info: dict[str, Any]) -> list[str]:
        """`check_loading_info` on the load report (missing or unused checkpoint tensors); returns the unused
        heads for the log. A subclass that loads a head checks its tensors here first (`hf_lm`)."""
        return check_loading_info(
            info.get("missing_keys", ()),
            info.get("unexpected_keys", ()),
            model=self.model_id,
            model_class=type(model).__name__,
        )

    def _load_tokenizer(self, kwargs: dict[str, Any]) -> Any:
        """The checkpoint's tokenizer: `AutoTokenizer.from_pretrained` with the model's loading kwargs
        (trust_remote_code, revision, code_revision). An adapter whose checkpoint ships no transformers tokenizer
        overrides this with GENEB's own (`geneb.encoders.families.biofm`); what it returns must answer the calls of this
        class (`__call__` with add_special_tokens, model_max_length, pad/unk_token_id, convert_ids_to_tokens,
        len)."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.where, **kwargs)

    def _takes_attention_mask(self, model: Any) -> bool:
        """Whether `model`'s forward pass gets the attention mask: the registry's `attention_mask` (auto: whether
        its forward has the parameter). Raises ValueError when the registry says yes and the forward has none."""
        want = self.extraction.attention_mask
        params = inspect.signature(model.forward).parameters
        takes = "attention_mask" in params
        if want == "auto":
            return takes
        if want and not takes:
            raise ValueError(
                f"model {self.model_id}: registry says the model takes an attention mask, but its forward "
                f"has no attention_mask parameter ({list(params)[:8]})"
            )
        return bool(want)

    def _override_tokenizer_padding(self, tokenizer: Any) -> None:
        """Switch off fixed padding/truncation from `tokenizer`'s files and the length warning."""
        backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
        if backend is not None and hasattr(backend, "padding"):
            if backend.padding:
                _log.warning(
                    "model %s: tokenizer files set padding %s; overridden (GENEB pads itself)",
                    self.model_id,
                    backend.padding,
                )
                backend.no_padding()
            if backend.truncation:
                _log.warning(
                    "model %s: tokenizer files set truncation %s; overridden (GENEB chunks itself)",
                    self.model_id,
                    backend.truncation,
                )
                backend.no_truncation()
        # GENEB never lets the tokenizer truncate; a huge limit silences its "sequence too long" warning
        tokenizer.model_max_length = SENTINEL_MAX_LENGTH * 10

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        # fast tokenizers also give each token's character span, so letters dropped without a token are seen
        fast = bool(getattr(self.tokenizer, "is_fast", False))
        enc = self.tokenizer(
            texts, add_special_tokens=False, padding=False, truncation=False, return_offsets_mapping=fast
        )
        self._offsets = enc["offset_mapping"] if fast else None
        return enc["input_ids"]

    def _token_texts(self, ids: list[int]) -> list[str] | None:
        return [str(t) for t in self.tokenizer.convert_ids_to_tokens(ids)]

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        if self.pad_sensitive and hasattr(self.model, "set_attention_type"):
            # BigBird switches itself to full attention for good when one batch is too short for block-sparse
            # attention, so every later batch would depend on which rows came first: restore the trained
            # block-sparse type before each batch and let the model decide for that batch alone
            self.model.set_attention_type("block_sparse")
        if want_states:
            return self.model(**inputs, output_hidden_states=True)
        return self.model(**inputs)

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            "name_or_path": str(self.where),
            "revision": self.revision,
            "weights_sha256": self.weights_sha256,
            "weights_format": self.weights_format,
            "tokenizer": type(self.tokenizer).__name__,
            "tokenizer_vocab_size": len(self.tokenizer),
            "model_class": type(self.model).__name__,
        }


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> HFEncoder:
    """Adapter entry point (see geneb.registry.families)."""
    return HFEncoder(settings, **kwargs)


#: the transformers auto class of each head kind
_AUTO_CLASSES = {"masked": "AutoModelForMaskedLM", "causal": "AutoModelForCausalLM"}


class NoLanguageHeadError(WeightsNotLoadedError):
    """The checkpoint has no trained language-model head for the class asked (its tensors are missing)."""


def _head_missing_keys(missing: list[str], base_model_prefix: str) -> list[str]:
    """The missing tensors that belong to the head: those outside the backbone's `base_model_prefix.`."""
    prefix = f"{base_model_prefix}." if base_model_prefix else ""
    return sorted(k for k in missing if not (prefix and k.startswith(prefix)))


class HFLanguageModelEncoder(HFEncoder):
    """`HFEncoder` whose network is the checkpoint's masked or causal language model (logits over the
    vocabulary). head: "masked" | "causal". Raises NoLanguageHeadError when the head's tensors are missing,
    and everything `HFEncoder` raises."""

    def __init__(self, settings: SettingsLike, *, head: str, **kwargs: Any) -> None:
        if head not in _AUTO_CLASSES:
            raise ValueError(f"language-model head {head!r}: expected one of {sorted(_AUTO_CLASSES)}")
        self.head = head
        self.auto_model_class = _AUTO_CLASSES[head]
        super().__init__(settings, **kwargs)

    def _check_loading_info(self, model: Any, info: dict[str, Any]) -> list[str]:
        missing = list(info.get("missing_keys", ()))
        head = _head_missing_keys(missing, getattr(model, "base_model_prefix", ""))
        if head:
            raise NoLanguageHeadError(
                f"model {self.model_id}: the checkpoint has no trained {self.head} language-model head for "
                f"{type(model).__name__} ({len(head)} head tensors missing, e.g. {head[:3]}); transformers would "
                "initialise them randomly, so the llr scorer does not apply (a fine-tuned classifier or a "
                "backbone-only export)"
            )
        return super()._check_loading_info(model, info)
