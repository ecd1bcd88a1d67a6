"""Test support: tiny random-init checkpoints of every transformers family GENEB serves, for the offline tests and
for checking a new adapter before a full run (docs/adding-a-model.md). A tests/ module, not part of the installed
package: the tests import it by bare name (`from tiny_models import build_tiny`; tests/ is on sys.path through
tests/conftest.py), and no module of src/geneb imports it.

Each builder writes a hub-snapshot folder with `save_pretrained` (config, safetensors weights, tokenizer
files), so loading it exercises exactly the path a downloaded checkpoint takes. Weights come from
`torch.manual_seed(seed)` then the model constructor. The remote-code builders write a small modeling file
and a config whose `auto_map` points at it, the layout hub repos with custom code use:

* `write_remote_hyena`: a causal long-convolution model whose forward takes no attention mask and whose
  char tokenizer pads on the left by default (HyenaDNA's traps: no attention mask, last-token pooling,
  and a 16-row embedding table for a 12-token vocabulary).
* `write_remote_mosaic`: a DNABERT-2-shaped BERT (the real DNABERT-2 config, shrunk) whose attention takes a
  Triton path whenever `import triton` works, asserting CUDA tensors there, and whose forward returns a
  plain (last hidden, pooled) tuple, ignoring `output_hidden_states` (a remote model returning a tuple without hidden states).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any, TypedDict

#: the transformers families `build_tiny` knows, with the tokenizer each uses
TINY_FAMILIES = ("esm", "bert", "modernbert", "bigbird", "llama", "mistral", "mixtral", "gpt-neox", "mamba")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def copy_tokenizer(src: str | Path, folder: str | Path) -> None:
    """Copy the tokenizer files of a hub-snapshot folder `src` into `folder` (weights are never copied)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    found = [name for name in TOKENIZER_FILES if (Path(src) / name).exists()]
    if "tokenizer.json" not in found:
        raise FileNotFoundError(f"no tokenizer.json in {src}")
    for name in found:
        shutil.copy(Path(src) / name, folder / name)


class _Sizes(TypedDict):  # the config keywords of every tiny family (`_config`)
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int


class _Attention(TypedDict):  # the attention sizes of the tiny transformers (all but Mamba)
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int


def _config(kind: str, vocab: int, hidden: int, layers: int) -> Any:
    import transformers as tf

    common: _Sizes = {"vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers}
    attn: _Attention = {"num_attention_heads": 2, "intermediate_size": 2 * hidden, "max_position_embeddings": 512}
    if kind == "bert":
        return tf.BertConfig(**common, **attn, pad_token_id=3)
    if kind == "modernbert":
        return tf.ModernBertConfig(
            **common,
            **attn,
            pad_token_id=3,
            cls_token_id=1,
            sep_token_id=2,
            bos_token_id=1,
            eos_token_id=2,
            global_attn_every_n_layers=1,  # type: ignore[call-arg]  # transformers 5 takes it as a legacy kwarg
        )
    if kind == "bigbird":
        long_attn: _Attention = {**attn, "max_position_embeddings": 1024}
        return tf.BigBirdConfig(
            **common,
            **long_attn,
            pad_token_id=3,
            attention_type="block_sparse",
            block_size=4,
            num_random_blocks=2,
        )
    if kind == "llama":
        return tf.LlamaConfig(**common, **attn, num_key_value_heads=2, pad_token_id=3)
    if kind == "mistral":
        return tf.MistralConfig(**common, **attn, num_key_value_heads=2, pad_token_id=3, sliding_window=None)
    if kind == "mixtral":
        return tf.MixtralConfig(
            **common,
            **attn,
            num_key_value_heads=2,
            pad_token_id=3,
            num_local_experts=4,
            num_experts_per_tok=2,
            sliding_window=None,
        )
    if kind == "gpt-neox":
        return tf.GPTNeoXConfig(**common, **attn, pad_token_id=3)
    if kind == "mamba":
        return tf.MambaConfig(**common, state_size=4, expand=2, conv_kernel=4, pad_token_id=3)
    raise ValueError(f"unknown tiny family {kind!r}; expected one of {TINY_FAMILIES}")


def build_tiny(
    kind: str,
    folder: str | Path,
    *,
    tokenizer_dir: str | Path | None = None,
    seed: int = 0,
    hidden: int = 32,
    layers: int = 2,
) -> Path:
    """Write a tiny random-init checkpoint of family `kind` (one of TINY_FAMILIES) into `folder`.

    tokenizer_dir: a folder with a real tokenizer.json (DNABERT-2's BPE for most families, GENA-LM's for
    bigbird); the vocabulary size is taken from it. "esm" builds NT's 6-mer tokenizer itself and ignores it.
    Returns the folder. Raises ValueError for an unknown kind, FileNotFoundError without a tokenizer.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    if kind == "esm":
        from geneb.encoders.families.random_init import _build_random_esm as build_random_esm

        cfg = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 2}
        cfg.update(intermediate_size=2 * hidden, max_position_embeddings=1002)
        return build_random_esm({"config": cfg, "init_seed": seed}, folder)
    if tokenizer_dir is None:
        raise FileNotFoundError(f"tiny {kind} needs tokenizer_dir (a folder with tokenizer.json)")
    copy_tokenizer(tokenizer_dir, folder)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    config = _config(kind, vocab, hidden, layers)
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(folder)
    return folder


# ---- remote-code fixtures ----------------------------------------------------------------------------------------

_HYENA_CONFIG = """
from transformers import PretrainedConfig


class TinyHyenaConfig(PretrainedConfig):
    model_type = "tinyhyena"

    def __init__(self, vocab_size=16, d_model=16, n_layer=2, kernel=9, max_seq_len=1024, **kwargs):
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layer = n_layer
        self.kernel = kernel
        self.max_seq_len = max_seq_len
        super().__init__(**kwargs)
"""

_HYENA_MODEL = '''
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from .configuration_tinyhyena import TinyHyenaConfig


class CausalConvBlock(nn.Module):
    """Depthwise causal long convolution (left padding only) with a gate and a residual."""

    def __init__(self, d, k):
        super().__init__()
        self.k = k
        self.filt = nn.Conv1d(d, d, k, groups=d)
        self.gate = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        y = self.filt(F.pad(x.transpose(1, 2), (self.k - 1, 0))).transpose(1, 2)
        return x + self.out(y * torch.sigmoid(self.gate(x)))


class TinyHyenaModel(PreTrainedModel):
    config_class = TinyHyenaConfig
    base_model_prefix = "tinyhyena"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(CausalConvBlock(config.d_model, config.kernel) for _ in range(config.n_layer))
        self.norm = nn.LayerNorm(config.d_model)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids, output_hidden_states=False, return_dict=None, **kwargs):
        x = self.embed(input_ids)
        states = [x]
        for block in self.blocks:
            x = block(x)
            states.append(x)
        x = self.norm(x)
        states[-1] = x
        return BaseModelOutput(last_hidden_state=x, hidden_states=tuple(states) if output_hidden_states else None)
'''

_MOSAIC_CONFIG = """
from transformers import BertConfig as _Base


class BertConfig(_Base):
    def __init__(self, alibi_starting_size=512, **kwargs):
        self.alibi_starting_size = alibi_starting_size
        super().__init__(**kwargs)
"""

_MOSAIC_MODEL = """
import math

import torch
from torch import nn
from transformers import PreTrainedModel

from .configuration_bert import BertConfig

try:  # like the DNABERT-2 code: the Triton kernel is taken whenever triton imports
    import triton  # noqa: F401

    TRITON = True
except ImportError:
    TRITON = False


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if TRITON:
            assert q.is_cuda and k.is_cuda and v.is_cuda, "q, k, v must be CUDA tensors (Triton flash attention)"
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class Layer(nn.Module):
    def __init__(self, d, heads, inter):
        super().__init__()
        self.attn = Attention(d, heads)
        self.ln1 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, inter), nn.GELU(), nn.Linear(inter, d))
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.mlp(x))


class BertModel(PreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"

    def __init__(self, config):
        super().__init__(config)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            Layer(config.hidden_size, config.num_attention_heads, config.intermediate_size)
            for _ in range(config.num_hidden_layers)
        )
        self.pool = nn.Linear(config.hidden_size, config.hidden_size)
        self.post_init()

    def get_input_embeddings(self):
        return self.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **kwargs):
        # like MosaicBERT: output flags are ignored and a plain tuple comes back
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        x = self.word_embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, attention_mask)
        return x, torch.tanh(self.pool(x[:, 0]))
"""


def _write_remote(
    folder: Path,
    files: dict[str, str],
    config_cls_file: str,
    model_module: str,
    build_config: Any,
    auto_map: dict[str, str],
    seed: int,
) -> Path:
    import importlib.util
    import sys

    import torch

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    # build the weights with the written classes, imported as a throwaway package
    pkg = f"_geneb_tiny_{abs(hash(str(folder.resolve())))}"
    (folder / "__init__.py").write_text("")
    spec = importlib.util.spec_from_file_location(pkg, folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None:
        raise ImportError(f"cannot import the remote-code folder {folder} as a package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[pkg] = module
    try:
        cfg_mod = importlib.import_module(f"{pkg}.{config_cls_file}")
        model_mod = importlib.import_module(f"{pkg}.{model_module}")
        config = build_config(cfg_mod)
        config.auto_map = auto_map
        torch.manual_seed(seed)
        model_cls = getattr(model_mod, auto_map["AutoModel"].split(".")[1])
        model_cls(config).save_pretrained(folder)
    finally:
        for key in [k for k in sys.modules if k == pkg or k.startswith(pkg + ".")]:
            del sys.modules[key]
        (folder / "__init__.py").unlink()
    return folder


def write_char_tokenizer(folder: str | Path, *, padding_side: str = "left") -> None:
    """HyenaDNA-style character tokenizer: [CLS]=0 [SEP]=1 [BOS]=2 [MASK]=3 [PAD]=4 [RESERVED]=5 [UNK]=6
    A=7 C=8 G=9 T=10 N=11 (registry.yaml loader notes), one [SEP] appended, left padding by default."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors

    vocab = {
        t: i
        for i, t in enumerate(
            ["[CLS]", "[SEP]", "[BOS]", "[MASK]", "[PAD]", "[RESERVED]", "[UNK]", "A", "C", "G", "T", "N"]
        )
    }
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.post_processor = processors.TemplateProcessing(single="$A [SEP]", special_tokens=[("[SEP]", 1)])
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
                "sep_token": "[SEP]",
                "cls_token": "[CLS]",
                "mask_token": "[MASK]",
                "padding_side": padding_side,
            }
        )
    )


def write_remote_hyena(folder: str | Path, *, seed: int = 0, d_model: int = 16, kernel: int = 9) -> Path:
    """Write the tiny HyenaDNA-like remote-code checkpoint (see the module docstring) into `folder`."""
    folder = Path(folder)
    write_char_tokenizer(folder)
    return _write_remote(
        folder,
        {"configuration_tinyhyena.py": _HYENA_CONFIG, "modeling_tinyhyena.py": _HYENA_MODEL},
        "configuration_tinyhyena",
        "modeling_tinyhyena",
        lambda m: m.TinyHyenaConfig(vocab_size=16, d_model=d_model, kernel=kernel, max_seq_len=1024),
        {"AutoConfig": "configuration_tinyhyena.TinyHyenaConfig", "AutoModel": "modeling_tinyhyena.TinyHyenaModel"},
        seed,
    )


def write_remote_mosaic(
    folder: str | Path, dnabert2_dir: str | Path, *, seed: int = 0, hidden: int = 32, layers: int = 2
) -> Path:
    """Write the tiny DNABERT-2-shaped remote-code checkpoint into `folder`: the real DNABERT-2 config.json
    and tokenizer from `dnabert2_dir`, shrunk to `hidden`/`layers`, with GENEB's own small modeling file."""
    folder = Path(folder)
    copy_tokenizer(dnabert2_dir, folder)
    real = json.loads((Path(dnabert2_dir) / "config.json").read_text())
    keep = {
        k: v
        for k, v in real.items()
        if k not in ("auto_map", "architectures", "_name_or_path", "transformers_version", "torch_dtype")
    }
    keep.update(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=2 * hidden)
    return _write_remote(
        folder,
        {"configuration_bert.py": _MOSAIC_CONFIG, "bert_layers.py": _MOSAIC_MODEL},
        "configuration_bert",
        "bert_layers",
        lambda m: m.BertConfig(**keep),
        {"AutoConfig": "configuration_bert.BertConfig", "AutoModel": "bert_layers.BertModel"},
        seed,
    )
