"""DNAGPT: GENEB's own torch network and its adapter.

DNAGPT's network (Zhang et al. 2023) as GENEB's own torch module, with the authors' module names so its
state-dict keys are the released checkpoints' keys (github.com/TencentAILabHealthcare/DNAGPT at commit
9b6c0931e3b2011ee5bbb4b988be3e19d62953ae: `dna_gpt/model/gpt.py`, `dna_gpt/model/dna_gpt.py`).

A GPT-2-style pre-norm decoder with no bias anywhere, learned absolute positions, causal scaled-dot-product
attention with no padding mask, a tanh-GELU MLP of width 4 x d and a final LayerNorm; three heads that embeddings
never use. The adapter (tokenizer, checkpoint reading, engine glue) is `geneb.encoders.families.dnagpt`.

DNAGPT (Zhang et al. 2023, "DNAGPT: A Generalized Pre-trained Tool for Versatile DNA Sequence Analysis
Tasks") behind the shared token-model engine: GENEB's own torch module and tokenizer, written from the
authors' code, which is no installable package (github.com/TencentAILabHealthcare/DNAGPT at commit
9b6c0931e3b2011ee5bbb4b988be3e19d62953ae, `_UPSTREAM`; files named below are of that commit).

Facts used (docs/adapters/dnagpt.md has the whole account):

* Architecture (`dna_gpt/model/gpt.py`, `dna_gpt/model/dna_gpt.py`): a GPT-2-style pre-norm decoder with no
  bias anywhere (`bias=False` for every released model: Linear layers and LayerNorms carry a weight only),
  learned absolute positions (`transformer.wpe`, `max_len` rows), causal scaled-dot-product attention with no
  padding mask, a tanh-GELU MLP of width 4 x d, and a final LayerNorm `transformer.ln_f`. `DNAGPT` adds three
  heads on top (`number_embedding`, `mlm_head`, `num_regression`; Linear, SiLU, LayerNorm, Linear) that
  embeddings never use. The sizes per checkpoint name are `DNAGPT.from_name` (`_ARCHITECTURES`).
* Tokenizer (`dna_gpt/tokenizer.py` KmerTokenizer; the reserved tokens and `dynamic_kmer` per model in
  `test.py` get_model): 34 reserved tokens `<0>`..`<Z>` (ids 0-33; `<P>` = 20 is the pad, `<R>` = 21 the
  human species token), then k-mers over the bases in the order N, A, G, C, T (`itertools.product`): 6-mers
  only for dna_gpt0.1b_h (15,659 tokens), all 1- to 6-mers for the others (`dynamic_kmer`; 19,564 tokens).
  A sequence is cut into non-overlapping 6-mers from its first base; a piece not in the vocabulary (a
  trailing partial 6-mer under a 6-mer-only vocabulary, a letter outside NAGCT, lowercase) becomes id 0, the
  reserved token `<0>`, which is the tokenizer's `unk_id`.
* Checkpoints (`test.py` load_model, README "Download pre-trained weights"): `<name>.pth`, a torch.save'd
  state dict, or a dict holding it under `model`; the authors load it with `strict=False`. GENEB loads it
  weights-only and requires the class's exact key set and shapes (`load_state_dict`); only a head that is
  wholly absent may be missing (it is then not built; embeddings never use it).
* Embedding (the paper's reference extractor, github.com/darlednik/GENEB at e3d5f4525c7fe12e4658c4ec6af803bc6bc42788,
  `embedding_pipeline/extractors/dnagpt.py`): `<R>` + the sequence, cut at the model's `max_len` tokens,
  right-padded with `<P>`, the post-`ln_f` hidden states averaged over the non-pad tokens (`<R>` included).
  GENEB does the same with the engine: `<R>` is the prefix special token on every chunk, pooled unless
  `exclude_special_tokens`; the model is causal and takes no mask, so batches are padded on the right.
"""

from __future__ import annotations

import itertools
import logging
import pickle
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.core.provenance import file_sha256
from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.registry.spec import ExtractionSettings


@dataclass(frozen=True)
class Architecture:
    """One released checkpoint's sizes (`DNAGPT.from_name`, dna_gpt/model/dna_gpt.py) and its tokenizer's
    `dynamic_kmer` (test.py get_model). Every released model has `bias=False`."""

    num_layers: int
    num_heads: int
    embedding_dim: int
    max_len: int
    dynamic_kmer: bool


#: DNAGPT's heads on top of the backbone (never used for embeddings)
_HEADS = ("number_embedding", "mlm_head", "num_regression")


class _Attention(nn.Module):
    """gpt.py MultiheadAttention: `c_attn` (d -> 3d, split q, k, v in that order), causal SDPA, `c_proj`."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"DNAGPT: embedding_dim {dim} is not a multiple of num_heads {num_heads}")
        self.c_attn = nn.Linear(dim, 3 * dim, bias=False)
        self.c_proj = nn.Linear(dim, dim, bias=False)
        self.num_heads = num_heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2) for z in self.c_attn(x).split(c, 2)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class _MLP(nn.Module):
    """gpt.py MLP: `c_fc` (d -> 4d), tanh-approximated GELU, `c_proj` (4d -> d)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim, bias=False)
        self.c_proj = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class _Block(nn.Module):
    """gpt.py Block (pre-norm): x + attn(ln_1(x)), then x + mlp(ln_2(x)); LayerNorm eps 1e-5, no bias."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.attn = _Attention(dim, num_heads)
        self.mlp = _MLP(dim)
        self.ln_1 = nn.LayerNorm(dim, eps=1e-5, bias=False)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-5, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def _head(dim: int, out: int, inp: int | None = None) -> nn.Sequential:
    """dna_gpt.py's head layout: Linear, SiLU, LayerNorm, Linear (state-dict indices 0, 2, 3)."""
    return nn.Sequential(
        nn.Linear(inp or dim, dim, bias=False),
        nn.SiLU(),
        nn.LayerNorm(dim, eps=1e-5, bias=False),
        nn.Linear(dim, out, bias=False),
    )


class _Backbone(nn.Module):
    """dna_gpt.py's `transformer`: token embeddings `wte`, positions `wpe`, blocks `h`, final LayerNorm `ln_f`
    (built and registered in this order, as the authors' ModuleDict: the same state-dict keys and random init)."""

    def __init__(self, arch: Architecture, vocab_size: int) -> None:
        super().__init__()
        d = arch.embedding_dim
        self.wte = nn.Embedding(vocab_size, d)
        self.wpe = nn.Embedding(arch.max_len, d)
        self.h = nn.ModuleList(_Block(d, arch.num_heads) for _ in range(arch.num_layers))
        self.ln_f = nn.LayerNorm(d, eps=1e-5, bias=False)


class DNAGPTModel(nn.Module):
    """DNAGPT with the authors' module names, so its state-dict keys are the released checkpoints' keys:
    `transformer.wte`, `transformer.wpe`, `transformer.h.<i>.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,
    mlp.c_proj}`, `transformer.ln_f`, and the heads `number_embedding`, `mlm_head`, `num_regression` (each
    `.0`, `.2`, `.3`). heads: which heads to build (all by default).

    forward(input_ids (B, T) long) -> {"last_hidden_state": (B, T, d) after ln_f, "hidden_states": None, or
    with output_hidden_states the tuple of num_layers + 1 states: the embeddings (tokens + positions), the
    output of each block, the last one after ln_f (transformers' GPT-2 convention)}. The heads are not run."""

    def __init__(self, arch: Architecture, vocab_size: int, heads: tuple[str, ...] = _HEADS) -> None:
        super().__init__()
        d = arch.embedding_dim
        self.arch = arch
        self.transformer = _Backbone(arch, vocab_size)
        sizes = {"number_embedding": (d, 1), "mlm_head": (vocab_size, None), "num_regression": (1, None)}
        for name in heads:
            out, inp = sizes[name]
            setattr(self, name, _head(d, out, inp))

    def forward(self, input_ids: torch.Tensor, output_hidden_states: bool = False) -> dict[str, Any]:
        t = input_ids.shape[1]
        pos = torch.arange(t, device=input_ids.device)
        x = self.transformer.wte(input_ids) + self.transformer.wpe(pos)[None]
        states = [x]
        for block in self.transformer.h:
            x = block(x)
            states.append(x)
        x = self.transformer.ln_f(x)
        states[-1] = x
        return {"last_hidden_state": x, "hidden_states": tuple(states) if output_hidden_states else None}


_log = logging.getLogger(__name__)

#: the authors' code every fact of this module was read from
_UPSTREAM = "TencentAILabHealthcare/DNAGPT@9b6c0931e3b2011ee5bbb4b988be3e19d62953ae"
# the paper's reference extractor (its `<R>` prefix, cap and pooling):
# darlednik/GENEB@e3d5f4525c7fe12e4658c4ec6af803bc6bc42788:embedding_pipeline/extractors/dnagpt.py

#: test.py get_model: the reserved tokens, in id order, each written `<t>` (KmerTokenizer.__init__)
_RESERVED = (
    tuple("0123456789")
    + ("+", "-", "*", "/", "=", "&", "|", "!")
    + ("M", "B")
    + ("P",)
    + tuple("RIKLOQSUV")
    + tuple("WYXZ")
)
#: KmerTokenizer.bases: the k-mer alphabet in the order its vocabulary is built
_BASES = "NAGCT"
#: KmerTokenizer(6, ...) in test.py: non-overlapping 6-mers
_K = 6
#: README "Tips" 2: the species token defaults to R (human); the reference extractor prepends `<R>` to every row
_SPECIES_TOKEN = "<R>"
#: the token a piece outside the vocabulary becomes (KmerTokenizer.unk_id = 0, i.e. `<0>`)
_UNK_ID = 0


#: DNAGPT.from_name's table (UPSTREAM dna_gpt/model/dna_gpt.py) with test.py's dynamic_kmer (False only for 0.1b_h)
_ARCHITECTURES: dict[str, Architecture] = {
    "dna_gpt0.1b_h": Architecture(num_layers=12, num_heads=12, embedding_dim=768, max_len=4096, dynamic_kmer=False),
    "dna_gpt0.1b_m": Architecture(num_layers=12, num_heads=12, embedding_dim=768, max_len=512, dynamic_kmer=True),
    "dna_gpt3b_m": Architecture(num_layers=60, num_heads=64, embedding_dim=2048, max_len=512, dynamic_kmer=True),
}
#: the architecture fields `load.config_overrides` may change (a smaller stand-in of the same layout)
_OVERRIDABLE = ("num_layers", "num_heads", "embedding_dim")
#: where the authors publish the weights (UPSTREAM README.md, "Download pre-trained weights")
_WEIGHTS_FOLDER = (
    "https://drive.google.com/drive/folders/10UPPx6V13oQW6knuLV7d8SRIA3D6hYor (or https://share.weiyun.com/car87dsv)"
)
_WEIGHTS_FILE = {
    "dna_gpt0.1b_h": "https://drive.google.com/file/d/15m6CH3zaMSqflOaf6ec5VPfiulg-Gh0u",
    "dna_gpt0.1b_m": "https://drive.google.com/file/d/1C0BRXfz7RNtCSjSY1dKQeR1yP7I3wTyx",
    "dna_gpt3b_m": "https://drive.google.com/file/d/1pQ3Ai7C-ObzKkKTRwuf6eshVneKHzYEg",
}


def _vocabulary(dynamic_kmer: bool) -> list[str]:
    """The token of each id (KmerTokenizer.idx_to_token): the 34 reserved tokens `<0>`..`<Z>`, then the k-mers
    over N, A, G, C, T in itertools.product order, 6-mers only or (dynamic_kmer) 1-mers up to 6-mers.
    15,659 tokens without dynamic_kmer, 19,564 with it."""
    kmers = ["".join(p) for n in range(1 if dynamic_kmer else _K, _K + 1) for p in itertools.product(_BASES, repeat=n)]
    return [f"<{t}>" for t in _RESERVED] + kmers


class KmerTokenizer:
    """GENEB's implementation of DNAGPT's tokenizer rules (see the module docstring) for plain sequences.

    `encode(seq)` cuts `seq` into non-overlapping 6-mers from position 0 (the last piece is shorter when
    len % 6 != 0) and looks each piece up; a piece outside the vocabulary is `_UNK_ID` (`<0>`), as in the
    authors' `piece_to_id`. The authors' `<...>` markup is not parsed: a model input holds bases only (the
    species token is added by the adapter), so `<` or `>` in a sequence is a ValueError."""

    def __init__(self, dynamic_kmer: bool) -> None:
        self.dynamic_kmer = dynamic_kmer
        self.tokens = _vocabulary(dynamic_kmer)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.pad_id = self.ids["<P>"]
        self.unk_id = _UNK_ID
        self.species_id = self.ids[_SPECIES_TOKEN]

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, seq: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(token ids, character span of each token) of one sequence. Raises ValueError for `<` or `>`."""
        if "<" in seq or ">" in seq:
            raise ValueError(f"DNAGPT tokenizer: a sequence holds no <token> markup, got {seq[:30]!r}")
        spans = [(i, min(i + _K, len(seq))) for i in range(0, len(seq), _K)]
        return [self.ids.get(seq[a:b], self.unk_id) for a, b in spans], spans


# ---- loading ----------------------------------------------------------------------------------------------


def _architecture(name: str, overrides: Mapping[str, Any] | None, *, model: str) -> Architecture:
    """The Architecture of checkpoint `name` (ARCHITECTURES), with `load.config_overrides` applied (only the
    OVERRIDABLE fields: a smaller stand-in of the same layout). Raises ModelLoadError for an unknown name or
    override key."""
    if name not in _ARCHITECTURES:
        raise ModelLoadError(
            f"model {model}: DNAGPT checkpoint name {name!r} is not one of the authors' models "
            f"{sorted(_ARCHITECTURES)} (DNAGPT.from_name, {_UPSTREAM}); set load.package_model_name"
        )
    overrides = dict(overrides or {})
    bad = sorted(set(overrides) - set(_OVERRIDABLE))
    if bad:
        raise ModelLoadError(
            f"model {model}: load.config_overrides {bad} are not DNAGPT architecture fields GENEB lets change "
            f"(only {list(_OVERRIDABLE)}; max_len and the vocabulary are the checkpoint's)"
        )
    if overrides:
        _log.warning(
            "model %s: DNAGPT architecture of %s overridden by load.config_overrides %s", model, name, overrides
        )
    base = _ARCHITECTURES[name]
    return replace(
        base,
        num_layers=int(overrides.get("num_layers", base.num_layers)),
        num_heads=int(overrides.get("num_heads", base.num_heads)),
        embedding_dim=int(overrides.get("embedding_dim", base.embedding_dim)),
    )


def _read_state_dict(path: Path, *, model: str, name: str) -> dict[str, torch.Tensor]:
    """The tensors of a released checkpoint file: a state dict, or a dict holding it under `model` (the
    authors' load_model). Unpickled weights-only (tensors and plain containers, never code), memory-mapped
    where the file's format allows. Raises ModelLoadError naming the model and file for a missing file (with
    where to get it), a file that holds more than tensors, or one without a state dict."""
    if not path.is_file():
        raise ModelLoadError(
            f"model {model}: the DNAGPT checkpoint {path} is missing; put the authors' {path.name} there "
            f"(Google Drive: {_WEIGHTS_FILE.get(name, _WEIGHTS_FOLDER)}; all weights: {_WEIGHTS_FOLDER})"
        )
    try:
        try:
            raw = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as err:  # a legacy (non-zip) torch.save file cannot be memory-mapped
            if "mmap" not in str(err):
                raise
            raw = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise ModelLoadError(
            f"model {model}: {path} holds objects other than tensors, which weights-only unpickling refuses "
            f"({str(err).splitlines()[0]}); GENEB never unpickles arbitrary objects. On a trusted machine, save "
            "its state dict alone: torch.save(torch.load(p, weights_only=False)['model'], p)"
        ) from err
    except (RuntimeError, EOFError, OSError) as err:
        raise ModelLoadError(f"model {model}: cannot read the DNAGPT checkpoint {path}: {err}") from err
    state = raw.get("model", raw) if isinstance(raw, Mapping) else raw
    if not isinstance(state, Mapping) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelLoadError(
            f"model {model}: {path} is not a DNAGPT state dict (a mapping of names to tensors, or one under 'model')"
        )
    return dict(state)


def _build_model(
    state: Mapping[str, torch.Tensor], arch: Architecture, vocab_size: int, *, model: str, path: Path
) -> DNAGPTModel:
    """A DNAGPTModel holding exactly the tensors of `state` (no random weights anywhere: the module is built
    on the meta device and the checkpoint's tensors are assigned). Raises WeightsNotLoadedError naming the
    model, the file and the keys for a missing or unexpected tensor (a head may be missing only as a whole,
    then it is not built) and for a tensor of another shape (e.g. the embedding table of the other
    vocabulary: dynamic_kmer does not match the checkpoint)."""
    heads = tuple(h for h in _HEADS if any(k.startswith(f"{h}.") for k in state))
    with torch.device("meta"):
        net = DNAGPTModel(arch, vocab_size, heads=heads)
    expected = net.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise WeightsNotLoadedError(
            f"model {model}: {path.name} does not match the DNAGPT layout of {arch} ({_UPSTREAM}): "
            f"{len(missing)} missing tensors {missing[:5]}, {len(unexpected)} unexpected tensors {unexpected[:5]}; "
            "the checkpoint is of another model or architecture (load.package_model_name?)"
        )
    wrong = [(k, tuple(state[k].shape), tuple(v.shape)) for k, v in expected.items() if state[k].shape != v.shape]
    if wrong:
        hint = (
            " (the embedding table has another vocabulary size: this checkpoint's tokenizer is not the one "
            f"{'with' if arch.dynamic_kmer else 'without'} 1- to 5-mers, so it is not this checkpoint name's)"
            if any(k in ("transformer.wte.weight", "mlm_head.3.weight") for k, _, _ in wrong)
            else ""
        )
        raise WeightsNotLoadedError(
            f"model {model}: {len(wrong)} tensors of {path.name} have other shapes than the DNAGPT layout of {arch} "
            f"expects, e.g. {wrong[0][0]} {wrong[0][1]} vs {wrong[0][2]}{hint}"
        )
    skipped = [h for h in _HEADS if h not in heads]
    if skipped:
        _log.info("model %s: %s holds no %s head (never used for embeddings)", model, path.name, skipped)
    net.load_state_dict(state, strict=True, assign=True)
    return net


class DNAGPTEncoder(TokenModelEncoder):
    """DNAGPT from a local folder holding the authors' `<name>.pth` (`settings.source.path`). The checkpoint
    name is `load.package_model_name`, else the registry id (the authors' names: ARCHITECTURES); its
    architecture is the authors' (`load.config_overrides` may shrink depth and width, for stand-ins). Raises
    ModelLoadError (unknown name, missing file, a file that is not a weights-only state dict, registry
    max_tokens above the position table) and WeightsNotLoadedError (keys or shapes) while loading."""

    @property
    def checkpoint_name(self) -> str:
        """The authors' checkpoint name: `load.package_model_name`, else the registry id (ARCHITECTURES)."""
        return self.settings.load.package_model_name or self.model_id

    def _load(self) -> LoadedNetwork:
        src = self.settings.source
        name = self.checkpoint_name
        arch = _architecture(name, self.settings.load.config_overrides, model=self.model_id)
        if not src.folder:
            raise ModelLoadError(
                f"model {self.model_id}: no folder to read the DNAGPT checkpoint {name}.pth from "
                f"(source {src.as_dict()}); download it ({_WEIGHTS_FILE.get(name, _WEIGHTS_FOLDER)}) "
                f"into a folder and point the config at it (model_weights: {{{self.model_id}: /path/to/folder}})"
            )
        path = Path(src.folder) / f"{name}.pth"
        tokenizer = KmerTokenizer(arch.dynamic_kmer)
        state = _read_state_dict(path, model=self.model_id, name=name)
        net = _build_model(state, arch, len(tokenizer), model=self.model_id, path=path)
        weights_sha256 = file_sha256(path, length=64)
        if self.extraction.max_tokens is not None and self.extraction.max_tokens > arch.max_len:
            raise ModelLoadError(
                f"model {self.model_id}: extraction.max_tokens {self.extraction.max_tokens} exceeds DNAGPT "
                f"{name}'s {arch.max_len} learned positions"
            )
        return LoadedNetwork(
            model=net.to(dtype=getattr(torch, self.weights_dtype)).eval().to(self.device),
            tokenizer=tokenizer,
            max_tokens=resolve_max_tokens(None, arch.max_len, self.extraction.max_tokens, model=self.model_id),
            max_tokens_from="registry" if self.extraction.max_tokens is not None else "config",
            prefix=(tokenizer.species_id,),
            pad_id=tokenizer.pad_id,
            unk_id=tokenizer.unk_id,
            hidden_size=arch.embedding_dim,
            vocab_size=len(tokenizer),
            num_embeddings=int(net.transformer.wte.num_embeddings),
            n_layers=arch.num_layers,
            uses_attention_mask=False,  # causal attention with no padding mask (gpt.py MultiheadAttention)
            weights_sha256=weights_sha256,
            details={"architecture": arch},
        )

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        encoded = [self.tokenizer.encode(t) for t in texts]
        self._offsets = [spans for _, spans in encoded]
        return [ids for ids, _ in encoded]

    def _token_texts(self, ids: list[int]) -> list[str] | None:
        return [self.tokenizer.tokens[i] for i in ids]

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        return self.model(inputs["input_ids"], output_hidden_states=want_states)

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            "upstream": _UPSTREAM,
            "checkpoint": f"{self.checkpoint_name}.pth",
            "weights_sha256": self.weights_sha256,
            "architecture": asdict(self.loaded.details["architecture"]),
            "tokenizer": f"DNAGPT k-mer ({'1- to 6-mers' if self.tokenizer.dynamic_kmer else '6-mers only'}), "
            f"{len(self.tokenizer)} tokens",
            "species_token": _SPECIES_TOKEN,
        }


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> DNAGPTEncoder:
    """Adapter entry point of family `dnagpt` (see geneb.registry.families)."""
    return DNAGPTEncoder(settings, **kwargs)
