"""Failure cases of kind "model loading" (../shared/cases/CASES.md): DNABERT-2's remote code and Triton,
transformers version skew, remote outputs without hidden_states, a padded embedding table, logits instead of a
representation, unpinned hub revisions.

Remote code is exercised with hand-made remote-code folders (config auto_map + a modeling file written at
test time, tests/tiny_models.py); families outside transformers with stand-in packages injected into
sys.modules that follow the documented APIs. Policy: docs/footguns.md ("Model loading").
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import sys
import types
import uuid

import h5py
import numpy as np
import pytest
import torch
import yaml
from packaging.specifiers import SpecifierSet
from transformers.modeling_outputs import BaseModelOutput

from extraction_support import random_dna, spec
from geneb.core.errors import (
    LayerNotExposedError,
    LooksLikeLogitsError,
    MissingPackageError,
    ModelForwardError,
    RemoteCodeError,
    TokenIdRangeError,
    TransformersVersionError,
)
from geneb.encoders.engine.checks import check_pooled_width, check_token_ids, get_layer
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.encoders.families.hf import HFEncoder
from geneb.extract.step import build_encoder, extract_task
from geneb.registry.families import check_transformers_range
from geneb.registry.load import (
    check_registry,
    extraction_hash,
    extraction_settings,
    load_registry,
    runnable,
)
from geneb.registry.registry import NotRunnableError, RegistryError
from registry_support import runnable_offline


@pytest.fixture(scope="module")
def registry(repo):
    return load_registry(
        repo / "config" / "models.yaml",
        yaml.safe_load((repo / "workflow" / "schemas" / "models.schema.yaml").read_text()),
    )


def _copy(zoo, kind, dest):
    """Copy a zoo checkpoint; the name gets a unique suffix (remote code is cached by folder name)."""
    dest = dest.with_name(f"{dest.name}-{uuid.uuid4().hex[:12]}")
    shutil.copytree(zoo.folder(kind), dest)
    return dest


# ---- DNABERT-2's remote code and Triton on CPU --------------------------------------------------------------------


@pytest.fixture
def importable_triton(tmp_path, monkeypatch):
    """A stand-in `triton` package that imports fine (as on a CPU runner that has triton installed). transformers
    itself is imported first: its own optional kernels would try the empty stand-in's submodules."""
    from transformers import AutoModel, AutoTokenizer, PreTrainedModel  # noqa: F401

    (tmp_path / "site" / "triton").mkdir(parents=True)
    (tmp_path / "site" / "triton" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop("triton", None)
    yield
    sys.modules.pop("triton", None)


def _mosaic(zoo, folder, load):
    s = extraction_settings(
        {"models": {"dnabert2-tiny": spec(folder, "hf-encoder", {"max_tokens": 512}, trust=True, load=load)}},
        "dnabert2-tiny",
        {},
    )
    return build_encoder(s, progress=False)


def test_dnabert2_cpu_with_triton_importable(zoo, tmp_path, importable_triton):
    """A DNABERT-2-shaped remote-code model on CPU with triton importable: GENEB forces the PyTorch path."""
    import triton  # noqa: F401 - importable here

    enc = _mosaic(
        zoo,
        _copy(zoo, "mosaic", tmp_path / "mosaic_hidden"),
        {"transformers": ">=4.26", "hide_modules_on_cpu": ["triton"]},
    )
    assert sys.modules[type(enc.model).__module__].TRITON is False
    out = enc.embed([random_dna(80, 1), random_dna(300, 2)])
    assert out.embeddings.shape == (2, 32) and np.isfinite(out.embeddings).all()
    import triton as again  # the stand-in is importable again after loading

    assert again is not None
    # without the hiding, the remote code takes the Triton path and fails on CPU tensors (the reported crash)
    # (GENEB's load-time padding check runs the model, so that is where it fails, naming the model)
    with pytest.raises(ModelForwardError, match="model dnabert2-tiny: the forward pass failed.*CUDA") as err:
        _mosaic(zoo, _copy(zoo, "mosaic", tmp_path / "mosaic_naive"), {"transformers": ">=4.26"})
    assert isinstance(err.value.__cause__, AssertionError)


def test_dnabert2_cpu_without_triton(zoo, tmp_path):
    """With triton absent the same model gives the same vectors."""
    import importlib.util

    assert importlib.util.find_spec("triton") is None  # the CPU torch build ships no triton
    a = _mosaic(
        zoo,
        _copy(zoo, "mosaic", tmp_path / "mosaic_plain"),
        {"transformers": ">=4.26", "hide_modules_on_cpu": ["triton"]},
    )
    b = zoo.encoder("mosaic")
    seqs = [random_dna(80, 1), random_dna(300, 2)]
    np.testing.assert_allclose(a.embed(seqs).embeddings, b.embed(seqs).embeddings, atol=1e-6)


@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="device check: needs CUDA (flash vs non-flash paths of a DNABERT-2-shaped model)",
)
def test_device_flash_and_plain_paths_agree(zoo, tmp_path):
    seqs = [random_dna(200, i) for i in range(4)]
    s = extraction_settings(
        {
            "models": {
                "m": spec(
                    _copy(zoo, "mosaic", tmp_path / "mosaic_gpu"),
                    "hf-encoder",
                    {"max_tokens": 512, "dtype": "float32"},
                    trust=True,
                    load={"transformers": ">=4.26"},
                )
            }
        },
        "m",
        {},
    )
    gpu = build_encoder(s, device="cuda", progress=False).embed(seqs).embeddings
    cpu = zoo.encoder("mosaic").embed(seqs).embeddings
    cos = (gpu * cpu).sum(1) / np.linalg.norm(gpu, axis=1) / np.linalg.norm(cpu, axis=1)
    assert cos.min() >= 0.999


# ---- transformers version skew ------------------------------------------------------------------------------------


def test_version_guard_unit():
    check_transformers_range("m", ">=4.26,<6", "5.24.0")
    check_transformers_range("m", None, "5.24.0")
    with pytest.raises(
        TransformersVersionError, match=r"model DNABERT-2 declares transformers >=4.28,<4.30, but 5.24.0"
    ):
        check_transformers_range("DNABERT-2", ">=4.28,<4.30", "5.24.0")
    with pytest.raises(ValueError, match="not a valid version specifier"):
        check_transformers_range("m", "four", "5.24.0")


def test_guard_runs_before_remote_code_loads(zoo, tmp_path):
    folder = _copy(zoo, "mosaic", tmp_path / "mosaic_old")
    s = extraction_settings(
        {"models": {"old": spec(folder, "hf-encoder", {}, trust=True, load={"transformers": "<5"})}}, "old", {}
    )
    with pytest.raises(TransformersVersionError, match="model old declares transformers <5"):
        build_encoder(s, progress=False)


def test_registry_remote_code_models_declare_a_valid_range(registry):
    """Every trust_remote_code entry declares a range; every runnable one must contain the installed version."""
    import transformers

    remote = {k: v for k, v in registry.models.items() if v.trust_remote_code}
    assert len(remote) > 40
    for name, v in remote.items():
        SpecifierSet(v.load.transformers)  # parses
        assert v.load.transformers_note, name
    outside = [
        f"model {k}: transformers {v.load.transformers} excludes {transformers.__version__}"
        for k, v in remote.items()
        if runnable(v)[0] and transformers.__version__ not in SpecifierSet(v.load.transformers)
    ]
    assert not outside, outside


def test_smoke_every_offline_runnable_registry_model(registry):
    """The 'pinned' matrix entry offline: every registry model runnable without network loads and embeds."""
    offline = [k for k, v in registry.models.items() if runnable_offline(v)]
    assert set(offline) >= {"kmer-3", "kmer-6", "random-esm-tiny", "mistral-dna-1m-ft-prom", "mistral-dna-1m-ft-tf1"}
    for name in offline:
        res = build_encoder(extraction_settings(registry, name, {}), progress=False).embed(
            [random_dna(90, 3), random_dna(400, 4)]
        )
        assert res.embeddings.shape[0] == 2 and np.isfinite(res.embeddings).all(), name


def test_other_registry_models_say_why_they_cannot_run(registry):
    """Not runnable offline: each entry carries a reason (requires network / pinning / package), never a crash."""
    for name, v in registry.models.items():
        ok, why = runnable(v)
        if not runnable_offline(v):
            assert why, name
        if not ok:
            with pytest.raises(NotRunnableError, match=name):
                extraction_settings(registry, name, {})


def test_tokenizer_auto_map_without_trust_is_refused(zoo, tmp_path):
    """Remote code in the tokenizer only (tokenizer_config.json auto_map, as custom DNA char tokenizers ship)
    with a built-in model: without trust_remote_code a generic tokenizer would give other ids -> refused."""
    folder = _copy(zoo, "bert", tmp_path / "bert_tokenizer_remote")
    (folder / "tokenization_dna.py").write_text(
        "from transformers import PreTrainedTokenizerFast\n\n\n"
        "class DNATokenizer(PreTrainedTokenizerFast):\n"
        "    def __call__(self, text, *args, **kwargs):  # the authors' own behaviour would live here\n"
        "        return super().__call__(text, *args, **kwargs)\n"
    )
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg.update(auto_map={"AutoTokenizer": [None, "tokenization_dna.DNATokenizer"]}, tokenizer_class="DNATokenizer")
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert "auto_map" not in json.loads((folder / "config.json").read_text())  # the model itself is built in
    s = extraction_settings(
        {"models": {"tok-remote": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "tok-remote", {}
    )
    with pytest.raises(
        RemoteCodeError,
        match=r"model tok-remote: the checkpoint ships remote code \(tokenizer_config.json "
        r"auto_map \['AutoTokenizer'\]\) but the registry entry has trust_remote_code: false",
    ):
        build_encoder(s, progress=False)


# ---- a remote model returning a tuple, no hidden_states -----------------------------------------------------------


def test_get_layer_from_any_output_shape():
    last = torch.randn(2, 5, 4)
    states = tuple(torch.randn(2, 5, 4) for _ in range(4)) + (last,)
    outputs = {
        "ModelOutput": BaseModelOutput(last_hidden_state=last, hidden_states=states),
        "tuple": (last, torch.randn(2, 4)),
        "dict": {"last_hidden_state": last},
        "tensor": last,
    }
    for kind, out in outputs.items():
        assert torch.equal(get_layer(out, -1, model="X"), last), kind
    assert torch.equal(get_layer(outputs["ModelOutput"], -3, model="X"), states[-3])
    for kind in ("tuple", "dict", "tensor"):
        with pytest.raises(LayerNotExposedError, match="model X does not expose intermediate layers"):
            get_layer(outputs[kind], -3, model="X")


def test_remote_model_returning_a_tuple(zoo):
    """The DNABERT-2-shaped model ignores output_hidden_states and returns (last, pooled): layer -1 works,
    an index raises, a module name is read with a hook."""
    seqs = [random_dna(60, 5)]
    assert zoo.encoder("mosaic").embed(seqs).embeddings.shape == (1, 32)
    with pytest.raises(LayerNotExposedError, match="does not expose intermediate layers"):
        zoo.encoder("mosaic", layer=1).embed(seqs)
    hooked = zoo.encoder("mosaic", layer="layers.0").embed(seqs)
    assert hooked.embeddings.shape == (1, 32)
    assert not np.allclose(hooked.embeddings, zoo.encoder("mosaic").embed(seqs).embeddings)


def test_layer_index_needs_the_embedding_output(tmp_path):
    """Remote code whose hidden_states leave out the embedding output (2 entries for 2 layers): index 0 would
    silently be the first block, not the embeddings, so an index other than -1 is LayerNotExposedError; -1 runs."""
    import tiny_models as tiny

    assert "states = [x]" in tiny._HYENA_MODEL
    folder = tmp_path / f"hyena-noemb-{uuid.uuid4().hex[:12]}"
    tiny.write_char_tokenizer(folder, padding_side="right")
    tiny._write_remote(
        folder,
        {
            "configuration_tinyhyena.py": tiny._HYENA_CONFIG,
            "modeling_tinyhyena.py": tiny._HYENA_MODEL.replace("states = [x]", "states = []"),
        },
        "configuration_tinyhyena",
        "modeling_tinyhyena",
        lambda m: m.TinyHyenaConfig(vocab_size=16, d_model=16, n_layer=2, max_seq_len=1024),
        {"AutoConfig": "configuration_tinyhyena.TinyHyenaConfig", "AutoModel": "modeling_tinyhyena.TinyHyenaModel"},
        0,
    )

    def encoder(layer):
        entry = spec(folder, "hyena", {"max_tokens": 1024, "layer": layer}, trust=True, load={"transformers": ">=4.26"})
        return build_encoder(extraction_settings({"models": {"hyena-noemb": entry}}, "hyena-noemb", {}), progress=False)

    seqs = [random_dna(60, 1), random_dna(30, 2)]
    for layer in (0, 1, 2):
        with pytest.raises(
            LayerNotExposedError,
            match=r"model hyena-noemb: 2 per-layer hidden states for 2 layers "
            rf"\(expected 3: .*index {layer} is ambiguous",
        ):
            encoder(layer).embed(seqs)
    assert encoder(-1).embed(seqs).embeddings.shape == (2, 16)


@pytest.fixture(scope="module")
def albert_folder(tmp_path_factory, shared):
    """A tiny ALBERT: one shared block applied num_hidden_layers (3) times per forward pass."""
    import transformers as tf

    from tiny_models import copy_tokenizer

    folder = tmp_path_factory.mktemp("albert")
    copy_tokenizer(shared / "models" / "tokenizers" / "dnabert-2-117m", folder)
    torch.manual_seed(0)
    tf.AlbertModel(
        tf.AlbertConfig(
            vocab_size=4096,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
            pad_token_id=3,
        )
    ).save_pretrained(folder)
    return folder


class _SpareModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(4, 4)
        self.spare = torch.nn.Linear(4, 4)  # built, never called in forward

    def forward(self, ids):
        return self.embed(ids)


class _SpareEncoder(TokenModelEncoder):
    """A stand-in model whose named module `spare` never runs."""

    def _load(self) -> LoadedNetwork:
        return LoadedNetwork(_SpareModule(), None, max_tokens=64, hidden_size=4, vocab_size=4, num_embeddings=4)

    def _tokenize(self, texts):
        return [["ACGT".index(c) for c in t] for t in texts]

    def _call(self, inputs, want_states):
        return self.model(inputs["input_ids"])


def test_module_layer_must_run_exactly_once(albert_folder):
    """A module-name layer is one layer's output only if it runs once per forward pass: ALBERT's shared block runs
    3 times (its last call is the final layer, not 'layer 0'), and a module that never runs has no output; both
    are LayerNotExposedError naming the module. The same ALBERT by index loads (4 states for 3 layers)."""
    from geneb.registry.load import DEFAULT_EXTRACTION

    name = "encoder.albert_layer_groups.0.albert_layers.0"
    seqs = [random_dna(40, 1), random_dna(70, 2)]

    def albert(layer):
        entry = spec(albert_folder, "hf-encoder", {"max_tokens": 64, "layer": layer})
        return build_encoder(extraction_settings({"models": {"tiny-albert": entry}}, "tiny-albert", {}), progress=False)

    with pytest.raises(
        LayerNotExposedError, match=rf"model tiny-albert: module '{name}' ran 3 times \(a shared block\?\)"
    ):
        albert(name).embed(seqs)
    assert albert(1).embed(seqs).embeddings.shape == (2, 32)
    settings = {
        "model": "spare",
        "family": "hf-encoder",
        "source": {"kind": "builtin"},
        "builtin": {},
        "trust_remote_code": False,
        "load": {},
        "extraction": {**DEFAULT_EXTRACTION, "layer": "spare"},
        "alphabet": {},
    }
    with pytest.raises(LayerNotExposedError, match=r"model spare: module 'spare' did not run in one forward pass"):
        _SpareEncoder(settings, progress=False).embed(["ACGT", "ACGTACGTAC"])


def test_module_returning_a_model_output_is_unpacked(zoo):
    """A named module that is a whole sub-model (BERT's `encoder`) returns a ModelOutput: its last_hidden_state is
    taken, the same vectors as layer -1 (BertModel adds nothing after its encoder)."""
    from transformers.utils import ModelOutput

    enc = zoo.encoder("bert", layer="encoder")
    seen = []
    handle = enc.model.encoder.register_forward_hook(lambda _m, _i, out: seen.append(type(out)))
    try:
        seqs = [random_dna(40, 1), random_dna(90, 2)]
        hooked = enc.embed(seqs).embeddings
    finally:
        handle.remove()
    assert seen and all(issubclass(t, ModelOutput) for t in seen)
    np.testing.assert_allclose(hooked, zoo.encoder("bert").embed(seqs).embeddings, atol=1e-6)


# ---- token ids against a padded embedding table -------------------------------------------------------------------


def test_token_ids_against_the_embedding_table():
    check_token_ids(torch.tensor([[0, 5, 11]]), 16, model="M")  # vocab 12, table padded to 16 rows: fine
    with pytest.raises(TokenIdRangeError, match="model M: token id 13 is outside the embedding table"):
        check_token_ids(torch.tensor([[0, 13]]), 12, model="M")


def test_padded_table_runs_and_mismatched_tokenizer_stops(zoo, tmp_path):
    hyena = zoo.encoder("hyena")
    assert len(hyena.tokenizer) == 12 and hyena.num_embeddings == 16
    assert np.isfinite(hyena.embed(["ACGTN"]).embeddings).all()
    folder = _copy(zoo, "bert", tmp_path / "bert_wrong_tokenizer")
    from tiny_models import copy_tokenizer

    copy_tokenizer(zoo.shared / "models" / "tokenizers" / "gena-lm-bigbird-base-t2t", folder)  # 32k ids, 4096 rows
    # the load-time padding check already tokenizes and runs a probe sequence, so loading is where it stops
    with pytest.raises(
        TokenIdRangeError, match=r"model wrongtok: token id \d+ is outside the embedding table \(0..4095\)"
    ):
        build_encoder(
            extraction_settings(
                {"models": {"wrongtok": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "wrongtok", {}
            ),
            progress=False,
        )


def test_pad_id_outside_the_table_is_replaced(tmp_path, caplog):
    """A [PAD] added to the tokenizer after training (id 6) on a 6-row table: pads are masked, so GENEB pads
    with id 0 instead (logged) and a row's vector is the same at batch size 1 (no pads) and 2 (padded)."""
    import transformers as tf
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "A": 1, "C": 2, "G": 3, "T": 4, "N": 5}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.add_special_tokens(["[PAD]"])
    folder = tmp_path / "gpt2_pad_added"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    tok_cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "[PAD]", "unk_token": "[UNK]"}
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    torch.manual_seed(0)
    cfg = tf.GPT2Config(
        vocab_size=6, n_embd=16, n_layer=2, n_head=2, n_positions=128, bos_token_id=None, eos_token_id=None
    )
    tf.GPT2Model(cfg).save_pretrained(folder)
    s = extraction_settings({"models": {"pad-added": spec(folder, "hf-decoder", {"max_tokens": 128})}}, "pad-added", {})
    with caplog.at_level("WARNING"):
        enc = build_encoder(s, batch_size=1, progress=False)
    assert enc.tokenizer.pad_token_id == 6 and enc.num_embeddings == 6 and enc.pad_id == 0
    assert "model pad-added: pad id 6 is outside the embedding table (6 rows); padding with id 0" in caplog.text
    seqs = [random_dna(30, 1), random_dna(50, 2)]
    alone = enc.embed(seqs).embeddings
    enc.batch_size = 2
    chunks, *_ = enc.make_chunks(seqs, [0, 1])
    ids, attn, _ = enc.batch_tensors(chunks)
    assert (attn == 0).sum() == 20 and (ids[attn == 0] == 0).all()  # the batch is padded, with id 0
    np.testing.assert_allclose(enc.embed(seqs).embeddings, alone, atol=1e-5)


_TABLE_CONFIG = """
from transformers import PretrainedConfig


class TinyEncConfig(PretrainedConfig):
    model_type = "tinyenc"

    def __init__(self, vocab_size=64, hidden_dim=16, max_seq_len=512, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_dim = hidden_dim
        self.max_seq_len = max_seq_len
        super().__init__(**kwargs)
"""

_TABLE_MODEL = """
import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from .configuration_tinyenc import TinyEncConfig


class TinyEncModel(PreTrainedModel):
    config_class = TinyEncConfig
    base_model_prefix = "tinyenc"

    def __init__(self, config):
        super().__init__(config)
        self.token_table = nn.Embedding(config.vocab_size, config.hidden_dim)  # not found by get_input_embeddings()
        self.mix = nn.Linear(config.hidden_dim, config.hidden_dim)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, **kwargs):
        x = self.token_table(input_ids)
        m = attention_mask[..., None].float() if attention_mask is not None else torch.ones_like(x[..., :1])
        ctx = (x * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)
        return BaseModelOutput(last_hidden_state=torch.tanh(self.mix(x + ctx)))
"""


def test_no_exposed_input_embeddings_uses_the_config_vocab_size(tmp_path, shared):
    """A remote-code model whose table get_input_embeddings() cannot find (NotImplementedError): the config's
    vocab_size (64) still bounds the ids, so a mismatched tokenizer (DNABERT-2's 4096 ids) stops at load
    with TokenIdRangeError, not an IndexError inside the model; a matching tokenizer embeds. With no table
    to measure, the width comes from the config, here under `hidden_dim` (the looks-like-logits width check needs
    it)."""
    from tiny_models import _write_remote, copy_tokenizer, write_char_tokenizer

    folder = tmp_path / f"tinyenc-{uuid.uuid4().hex[:12]}"
    write_char_tokenizer(folder, padding_side="right")
    _write_remote(
        folder,
        {"configuration_tinyenc.py": _TABLE_CONFIG, "modeling_tinyenc.py": _TABLE_MODEL},
        "configuration_tinyenc",
        "modeling_tinyenc",
        lambda m: m.TinyEncConfig(vocab_size=64, hidden_dim=16, max_seq_len=512),
        {"AutoConfig": "configuration_tinyenc.TinyEncConfig", "AutoModel": "modeling_tinyenc.TinyEncModel"},
        0,
    )

    def settings(path, name):
        entry = spec(path, "hf-encoder", {"max_tokens": 512}, trust=True, load={"transformers": ">=4.26"})
        return extraction_settings({"models": {name: entry}}, name, {})

    enc = build_encoder(settings(folder, "tinyenc"), progress=False)
    with pytest.raises(NotImplementedError):
        enc.model.get_input_embeddings()
    assert enc.num_embeddings == 64 and enc.vocab_size == 64 and enc.hidden_size == 16
    assert enc.embed([random_dna(40, 1)]).embeddings.shape == (1, 16)
    mismatched = folder.with_name(f"tinyenc-{uuid.uuid4().hex[:12]}")
    shutil.copytree(folder, mismatched)
    copy_tokenizer(shared / "models" / "tokenizers" / "dnabert-2-117m", mismatched)
    with pytest.raises(
        TokenIdRangeError, match=r"model tinyenc-dnabert2: token id \d+ is outside the embedding table \(0..63\)"
    ):
        build_encoder(settings(mismatched, "tinyenc-dnabert2"), progress=False)


# ---- logits, not a representation; the layer recorded -------------------------------------------------------------


def _fake_evo(monkeypatch, hidden=8, vocab=512):
    """A stand-in `evo` package following evo-model's API: Evo(name).model / .tokenizer; model(ids) -> (logits, cache)."""

    class Unembed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(hidden, vocab, bias=False)

        def unembed(self, u):
            return self.w(u)

    class StripedHyenaStandIn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.config = {"hidden_size": hidden, "vocab_size": vocab}
            self.embed = torch.nn.Embedding(vocab, hidden)
            self.mix = torch.nn.Linear(hidden, hidden)
            self.unembed = Unembed()

        def forward(self, ids):
            h = torch.cumsum(self.mix(self.embed(ids)), dim=1)  # causal
            return self.unembed.unembed(h), None

    class Tok:
        def tokenize(self, seq):
            return list(seq.encode())

    class Evo:
        def __init__(self, name):
            self.model, self.tokenizer = StripedHyenaStandIn(), Tok()

    module = types.ModuleType("evo")
    module.Evo = Evo
    module.__spec__ = importlib.machinery.ModuleSpec("evo", None)
    monkeypatch.setitem(sys.modules, "evo", module)


def _evo_settings():
    entry = {
        "display": "evo",
        "family": "evo",
        "source": {"kind": "builtin"},
        "architecture_family": "striped-hyena",
        "tokenizer_type": "single-nucleotide",
        "params": 0,
        "pretraining_domain": "prokaryote",
        "license": "x",
        "load": {"package_model_name": "evo-1-8k-base"},
        "extraction": {"max_tokens": 8192},
    }
    return extraction_settings({"models": {"evo-standin": entry}}, "evo-standin", {})


def test_evo_hidden_states_not_logits(monkeypatch):
    _fake_evo(monkeypatch)
    enc = build_encoder(_evo_settings(), progress=False)
    res = enc.embed([random_dna(30, 7), random_dna(70, 8)])
    assert res.embeddings.shape == (2, 8)  # hidden size, not the 512-token vocabulary
    alone = enc.embed([random_dna(30, 7)]).embeddings
    np.testing.assert_allclose(res.embeddings[:1], alone, atol=1e-5)  # causal, right padded, no mask


def test_pooled_logits_are_refused(monkeypatch):
    """The reference mistake (pooling what the generation API returns): 'looks like logits'."""
    from geneb.encoders.families.evo import EvoEncoder

    _fake_evo(monkeypatch)

    class LeavesUnembedding(EvoEncoder):
        def _open(self, name):
            from evo import Evo

            w = Evo(name)
            return w.model, w.tokenizer

    with pytest.raises(LooksLikeLogitsError, match="looks like logits"):
        LeavesUnembedding(_evo_settings(), progress=False).embed([random_dna(30, 7)])
    with pytest.raises(LooksLikeLogitsError):
        check_pooled_width(512, model="X", hidden_size=4096, vocab_size=512)
    check_pooled_width(512, model="Caduceus-PS", hidden_size=256, vocab_size=16, expected=512)


_LM_CONFIG = """
from transformers import PretrainedConfig


class TinyLMConfig(PretrainedConfig):
    model_type = "tinylm"

    def __init__(self, vocab_size=12, hidden_dim=32, pad_vocab_size_multiple=8, max_seq_len=1024, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_dim = hidden_dim
        self.pad_vocab_size_multiple = pad_vocab_size_multiple
        self.max_seq_len = max_seq_len
        super().__init__(**kwargs)
"""

_LM_MODEL = """
import torch
from torch import nn
from transformers import PreTrainedModel

from .configuration_tinylm import TinyLMConfig


class TinyLM(PreTrainedModel):
    config_class = TinyLMConfig

    def __init__(self, config):
        super().__init__(config)
        v = -(-config.vocab_size // config.pad_vocab_size_multiple) * config.pad_vocab_size_multiple
        self.embed_tokens = nn.Embedding(v, config.hidden_dim)
        self.mix = nn.Linear(config.hidden_dim, config.hidden_dim)
        self.lm_head = nn.Linear(config.hidden_dim, v, bias=False)
        self.post_init()

    def forward(self, input_ids, **kwargs):
        h = torch.cumsum(torch.tanh(self.mix(self.embed_tokens(input_ids))), dim=1)
        return self.lm_head(h), None
"""


def test_logits_caught_when_the_config_names_its_width_hidden_dim(tmp_path):
    """A causal LM whose AutoModel class returns (logits, cache), with its width under `hidden_dim` (32) and its
    vocabulary padded to a multiple of 8 (12 -> 16 rows and 16 logits, as HyenaDNA/Evo do): the pooled width 16
    is neither vocab_size nor a known hidden size by the old keys; the table width identifies the logits."""
    from tiny_models import _write_remote, write_char_tokenizer

    folder = tmp_path / f"tinylm-{uuid.uuid4().hex[:12]}"
    write_char_tokenizer(folder, padding_side="right")
    _write_remote(
        folder,
        {"configuration_tinylm.py": _LM_CONFIG, "modeling_tinylm.py": _LM_MODEL},
        "configuration_tinylm",
        "modeling_tinylm",
        lambda m: m.TinyLMConfig(),
        {"AutoConfig": "configuration_tinylm.TinyLMConfig", "AutoModel": "modeling_tinylm.TinyLM"},
        0,
    )
    entry = spec(folder, "hyena", {"max_tokens": 1024}, trust=True, load={"transformers": ">=4.26"})
    enc = build_encoder(extraction_settings({"models": {"tinylm": entry}}, "tinylm", {}), progress=False)
    assert enc.hidden_size == 32 and enc.vocab_size == 12 and enc.num_embeddings == 16
    with pytest.raises(
        LooksLikeLogitsError, match="model tinylm: pooled width 16 equals the vocabulary size; this looks like logits"
    ):
        enc.embed([random_dna(50, 1), random_dna(20, 2)])
    # the guard itself: a padded table's width counts as a vocabulary size, also when no hidden size is known
    with pytest.raises(LooksLikeLogitsError):
        check_pooled_width(16, model="X", hidden_size=None, vocab_size=12, num_embeddings=16)
    check_pooled_width(32, model="X", hidden_size=32, vocab_size=12, num_embeddings=16)
    check_pooled_width(16, model="X", hidden_size=16, vocab_size=12, num_embeddings=16)  # a 16-wide model is fine


def test_every_entry_states_its_layer_and_the_file_records_it(registry, zoo, make_task, tmp_path):
    for name, v in registry.models.items():
        if v.family not in ("kmer", "enformer", "shortcut", "python", "precomputed"):  # no hidden-state layers
            assert "layer" in (v.extraction or {}), f"model {name} does not state its layer"
    task = make_task([random_dna(100, 9), random_dna(40, 10)], [random_dna(60, 11)])
    extract_task(zoo.settings("mistral-dna", layer=2), task, tmp_path / "e.h5", progress=False)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f.attrs["layer"] == "2" and f.attrs["layer_resolved"] == "hidden_states[2]"
        assert json.loads(f.attrs["extraction_key"])["settings"]["extraction"]["layer"] == 2


def test_missing_optional_package_is_a_clear_error():
    """Without the evo-model package, the Evo family fails before loading, naming model and package."""
    with pytest.raises(MissingPackageError, match="model evo-standin needs the optional package 'evo-model'"):
        build_encoder(_evo_settings(), progress=False)


# ---- unpinned hub revisions ---------------------------------------------------------------------------------------


def test_validator_rejects_unpinned_hub_revisions(registry, repo):
    base = registry.raw["models"]["METAGENE-1"]
    for rev in ("main", "v1.0", "abc123", "A" * 40):
        bad = {"models": {"m": {**base, "source": {"kind": "hub", "hub_id": "x/y", "revision": rev}}}}
        assert any("40-hex" in p for p in check_registry(bad)), rev
    good = {
        "models": {
            "m": {
                **base,
                "source": {"kind": "hub", "hub_id": "x/y", "revision": "0123456789abcdef0123456789abcdef01234567"},
            }
        }
    }
    assert not check_registry(good)
    for name, v in registry.models.items():
        src = v.source
        assert src.kind != "hub" or len(src.revision) == 40, name
        if src.kind == "hub-unpinned":
            assert not runnable(v)[0] and "pinned revision" in runnable(v)[1]


def test_remote_code_needs_a_pin_even_outside_the_registry(zoo):
    settings = {
        **zoo.settings("mosaic"),
        "source": {"kind": "hub", "hub_id": "zhihan1996/DNABERT-2-117M", "revision": None},
    }
    with pytest.raises(RemoteCodeError, match="pinned 40-hex revision"):
        HFEncoder(settings, progress=False)


def test_auto_map_without_trust_is_refused(zoo, tmp_path):
    """The DNABERT-S reference defect: remote code present, not trusted -> built-in class with missing weights."""
    folder = _copy(zoo, "mosaic", tmp_path / "mosaic_untrusted")
    s = extraction_settings(
        {"models": {"dnabert-s-like": spec(folder, "hf-encoder", {"max_tokens": 512})}}, "dnabert-s-like", {}
    )
    with pytest.raises(RemoteCodeError, match="auto_map"):
        build_encoder(s, progress=False)


def test_every_key_component_changes_the_cache_path(zoo):
    base = zoo.registry("bert")
    entry = base["models"]["tiny-bert"]
    ref = extraction_hash(extraction_settings(base, "tiny-bert", {"allow_iupac": True}))
    variants = {
        "model_id": {"models": {"tiny-bert-2": entry}},
        "layer": {"models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "layer": 1}}}},
        "pooling": {"models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "pooling": "max"}}}},
        "dtype": {"models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "dtype": "bfloat16"}}}},
        "max_tokens": {"models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "max_tokens": 32}}}},
        "long_policy": {
            "models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "long_policy": "truncate"}}}
        },
        "rc": {"models": {"tiny-bert": {**entry, "extraction": {**entry["extraction"], "rc": "average"}}}},
    }
    hashes = {ref}
    for what, reg in variants.items():
        name = next(iter(reg["models"]))
        h = extraction_hash(extraction_settings(reg, name, {"allow_iupac": True}))
        assert h not in hashes, what
        hashes.add(h)
    iupac = extraction_hash(extraction_settings(base, "tiny-bert", {"allow_iupac": False}))
    assert iupac not in hashes
    pinned = [
        extraction_hash(
            {
                **extraction_settings(base, "tiny-bert", {}),
                "source": {"kind": "hub", "hub_id": "x/y", "revision": r * 40},
            }
        )
        for r in "ab"
    ]
    assert pinned[0] != pinned[1]  # revision


def test_local_weights_are_fingerprinted(zoo, tmp_path):
    """A local checkpoint is identified by its file contents: changed weights give a new cache path."""
    folder = _copy(zoo, "mistral-dna", tmp_path / "mistral_copy")
    reg = {"models": {"m": spec(folder, "hf-decoder", {"max_tokens": 256})}}
    before = extraction_hash(extraction_settings(reg, "m", {}))
    assert extraction_hash(extraction_settings(reg, "m", {})) == before
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(data))
    assert extraction_hash(extraction_settings(reg, "m", {})) != before


def test_hub_id_shadowed_by_a_local_folder_is_refused(zoo, tmp_path, monkeypatch):
    """A pinned hub entry whose hub id also names a folder under the working directory: transformers would load
    that folder instead of the pinned revision, so loading stops with a ValueError naming the folder."""
    import re

    monkeypatch.chdir(tmp_path)
    shutil.copytree(zoo.folder("bert"), tmp_path / "someorg" / "dna-model")
    entry = {
        **spec("unused", "hf-encoder", {"max_tokens": 64}),
        "source": {
            "kind": "hub",
            "hub_id": "someorg/dna-model",
            "revision": "0123456789abcdef0123456789abcdef01234567",
        },
    }
    settings = extraction_settings({"models": {"shadowed": entry}}, "shadowed", {})
    folder = re.escape(str((tmp_path / "someorg" / "dna-model").resolve()))
    with pytest.raises(
        ValueError,
        match=rf"model shadowed: a local folder {folder} has the hub id's name; transformers "
        r"would load it instead of someorg/dna-model@0123456789abcdef0123456789abcdef01234567",
    ):
        build_encoder(settings, progress=False)


def test_local_path_spellings_give_one_hash(zoo, tmp_path, monkeypatch):
    """One local checkpoint named '../models/bert', by its absolute path, with a trailing '/', or through '..' and
    '.': the cache folder follows its content, so every spelling gives one extraction_hash."""
    folder = tmp_path / "models" / "bert"
    shutil.copytree(zoo.folder("bert"), folder)
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")
    spellings = [
        "../models/bert",
        str(folder),
        str(folder) + "/",
        "../models/bert/",
        "./../models/bert",
        "../run/../models/bert",
    ]
    hashes = {
        extraction_hash(extraction_settings({"models": {"m": spec(p, "hf-encoder", {"max_tokens": 64})}}, "m", {}))
        for p in spellings
    }
    assert len(hashes) == 1, hashes


def test_auto_map_into_another_repository_needs_code_revision(zoo, tmp_path, monkeypatch, repo):
    """A trusted local checkpoint whose config.json auto_map names code in another hub repository
    ('someorg/remote-code--modeling_x.XModel'): transformers would fetch that code from the other repository's
    main branch, outside the folder's fingerprint and the cache key, so loading is refused unless
    load.code_revision pins it to a 40-hex commit; with the pin, code_revision reaches from_pretrained (model and
    tokenizer). from_pretrained is stood in (it would need the network) and loads the folder's built-in BERT."""
    import transformers as tf

    folder = _copy(zoo, "bert", tmp_path / "bert_foreign_code")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {
        "AutoConfig": "someorg/remote-code--configuration_x.XConfig",
        "AutoModel": "someorg/remote-code--modeling_x.XModel",
    }
    (folder / "config.json").write_text(json.dumps(cfg))
    calls: dict[str, dict] = {}

    def fake_model(where, **kwargs):
        calls["model"] = kwargs
        return tf.BertModel.from_pretrained(
            where, dtype=kwargs["dtype"], output_loading_info=kwargs["output_loading_info"]
        )

    def fake_tokenizer(where, **kwargs):
        calls["tokenizer"] = kwargs
        return tf.PreTrainedTokenizerFast.from_pretrained(where)

    monkeypatch.setattr(tf.AutoModel, "from_pretrained", fake_model)
    monkeypatch.setattr(tf.AutoTokenizer, "from_pretrained", fake_tokenizer)

    def settings(**load):
        entry = spec(folder, "hf-encoder", {"max_tokens": 64}, trust=True, load={"transformers": ">=4.26", **load})
        return extraction_settings({"models": {"foreign-code": entry}}, "foreign-code", {})

    for load in ({}, {"code_revision": "main"}, {"code_revision": "A" * 40}):
        with pytest.raises(
            RemoteCodeError,
            match=r"model foreign-code: its auto_map takes code from another repository "
            r"\(someorg/remote-code--configuration_x\.XConfig\), which transformers fetches from that "
            r"repository's main branch.*pin it with load\.code_revision \(a 40-hex commit",
        ):
            build_encoder(settings(**load), progress=False)
    assert not calls  # refused before anything is loaded
    pin = "0123456789abcdef0123456789abcdef01234567"
    enc = build_encoder(settings(code_revision=pin), progress=False)
    assert calls["model"]["code_revision"] == pin and calls["model"]["trust_remote_code"] is True
    assert calls["tokenizer"]["code_revision"] == pin
    assert extraction_hash(settings(code_revision=pin)) != extraction_hash(
        settings(code_revision="f" * 40)
    )  # in the cache key
    assert enc.embed([random_dna(40, 1)]).embeddings.shape == (1, enc.hidden_size)
    # the registry schema takes the pin (a 40-hex commit) and nothing else
    schema = yaml.safe_load((repo / "workflow" / "schemas" / "models.schema.yaml").read_text())
    for value, ok in ((pin, True), ("main", False)):
        entry = spec(
            folder,
            "hf-encoder",
            {"max_tokens": 64},
            trust=True,
            load={"transformers": ">=4.26", "code_revision": value},
        )
        (tmp_path / "models.yaml").write_text(yaml.safe_dump({"schema_version": 1, "models": {"foreign-code": entry}}))
        if ok:
            assert load_registry(tmp_path / "models.yaml", schema).models["foreign-code"].load.code_revision == pin
        else:
            with pytest.raises(RegistryError, match="code_revision"):
                load_registry(tmp_path / "models.yaml", schema)
