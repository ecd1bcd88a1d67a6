"""Loading a language-model head through the embedding adapter's path (geneb.zeroshot.llr): hub-layout
folders written here with a real config and tokenizer and a seeded random-init head (plumbing only), the real
fine-tuned Mistral-DNA checkpoint (no head: not applicable, never a random head), and batched == naive scores
through real BPE models (including variants whose alleles tokenise differently)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from extraction_support import random_dna, spec
from geneb.registry.load import extraction_settings
from geneb.zeroshot.llr import (
    LanguageModel,
    NoLanguageHead,
    _variant_tokens,
    head_split,
    load_language_model,
    score_llr,
    score_llr_naive,
)
from geneb.zeroshot.task import NotApplicable, ZeroShotTask

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _settings(folder: Path, family: str, max_tokens: int) -> dict:
    return extraction_settings({"models": {"m": spec(folder, family, {"max_tokens": max_tokens})}}, "m", {})


def _copy_tokenizer(source: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).exists():
            shutil.copy(source / name, folder / name)


def _variant_task(n: int = 10, length: int = 40) -> ZeroShotTask:
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        seq = random_dna(length, seed=100 + i)
        pos = int(rng.integers(length))
        alt = str(rng.choice([b for b in "ACGT" if b != seq[pos]]))
        rows.append({"sequence": seq, "pos": pos, "ref": seq[pos], "alt": alt, "label": i % 2})
    return ZeroShotTask(name="bpe-variants", kind="variant", rows=pd.DataFrame(rows), data_sha256="0" * 64)


def _paired_task() -> ZeroShotTask:
    rows = pd.DataFrame(
        {
            "sequence_a": [random_dna(24, seed=i) for i in range(3)],
            "sequence_b": [random_dna(24, seed=50 + i) for i in range(3)],
        }
    )
    return ZeroShotTask(name="pairs", kind="paired", rows=rows, data_sha256="0" * 64)


@pytest.fixture(scope="module")
def mistral_causal(tmp_path_factory, shared) -> Path:
    """Mistral-DNA's real config and BPE tokenizer, a seeded random-init MixtralForCausalLM (head saved)."""
    from transformers import AutoConfig, MixtralForCausalLM

    real = shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom"
    folder = tmp_path_factory.mktemp("mistral-causal")
    _copy_tokenizer(real, folder)
    config = AutoConfig.from_pretrained(real)
    config.architectures = ["MixtralForCausalLM"]
    torch.manual_seed(0)
    MixtralForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert_masked(tmp_path_factory, shared) -> Path:
    """The real DNABERT-2 BPE tokenizer, a small seeded random-init BertForMaskedLM over its vocabulary."""
    from transformers import BertConfig, BertForMaskedLM

    folder = tmp_path_factory.mktemp("bert-masked")
    _copy_tokenizer(shared / "models" / "tokenizers" / "dnabert-2-117m", folder)
    config = BertConfig(
        vocab_size=4096,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=3,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def test_causal_head_loads_and_batched_equals_naive(mistral_causal):
    model = load_language_model(_settings(mistral_causal, "hf-decoder", 256), head="causal")
    assert isinstance(model, LanguageModel) and model.identity["model_class"] == "MixtralForCausalLM"
    assert head_split(model.network) is not None  # batched runs the head at the read positions only, naive everywhere
    task = _variant_task()
    batched = score_llr(model, task, batch_size=4)
    naive = score_llr_naive(model, task)
    np.testing.assert_allclose(batched["score"], naive["score"], rtol=1e-5, atol=1e-6)
    assert np.abs(batched["score"]).max() > 0
    paired = score_llr(model, _paired_task())
    np.testing.assert_allclose(paired["score"], score_llr_naive(model, _paired_task())["score"], rtol=1e-5, atol=1e-6)


def test_masked_head_loads_and_batched_equals_naive_with_unaligned_bpe_spans(bert_masked):
    model = load_language_model(_settings(bert_masked, "hf-encoder", 128), head="masked")
    assert isinstance(model, LanguageModel) and model.mask_id == 4 and model.prefix == (1,) and model.suffix == (2,)
    task = _variant_task()
    spans = [_variant_tokens(model.tokenize, r.sequence, r.pos, r.ref, r.alt) for r in task.rows.itertuples()]
    assert any(s.aligned for s in spans) and any(not s.aligned for s in spans)  # both BPE rules are exercised
    assert head_split(model.network) is not None
    batched = score_llr(model, task, batch_size=3)
    np.testing.assert_allclose(batched["score"], score_llr_naive(model, task)["score"], rtol=1e-5, atol=1e-6)


def test_only_transformers_own_classes_have_their_head_split():
    class MixtralForCausalLM(torch.nn.Module):  # remote code may reuse a name with another forward
        model = lm_head = torch.nn.Identity()

    assert head_split(MixtralForCausalLM()) is None
    assert head_split(torch.nn.Linear(2, 2)) is None


def test_a_checkpoint_without_head_weights_is_not_applicable(shared, tmp_path):
    # the real fine-tuned Mistral-DNA keeps its classifier (score.weight), not its lm_head
    real = shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom"
    result = load_language_model(_settings(real, "hf-decoder", 256), head="causal")
    assert isinstance(result, NoLanguageHead) and "lm_head.weight" in result.reason
    verdict = score_llr(result, _variant_task(2))
    assert isinstance(verdict, NotApplicable) and verdict.model == "m" and "no trained causal" in verdict.reason


def test_a_backbone_only_export_is_not_applicable(bert_masked, tmp_path):
    from transformers import AutoModel

    AutoModel.from_pretrained(bert_masked).save_pretrained(tmp_path)  # BertModel: no cls.predictions head
    _copy_tokenizer(bert_masked, tmp_path)
    result = load_language_model(_settings(tmp_path, "hf-encoder", 128), head="masked")
    assert isinstance(result, NoLanguageHead) and "cls.predictions" in result.reason


def test_no_head_declared_or_no_loader_is_not_applicable():
    settings = extraction_settings({"models": {"k": {**spec("x", "kmer"), "source": {"kind": "builtin"}}}}, "k", {})
    assert "no language-model head loader" in load_language_model(settings, head="masked").reason
    assert "lm_head 'none'" in load_language_model(settings, head="none").reason


@pytest.fixture(scope="module")
def nt_style_masked(tmp_path_factory) -> Path:
    """A Nucleotide-Transformer-style checkpoint: a slow EsmTokenizer over non-overlapping 6-mers (no character
    offsets) and a small seeded random-init EsmForMaskedLM."""
    import itertools

    from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

    folder = tmp_path_factory.mktemp("nt-style")
    words = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]
    words += ["".join(p) for p in itertools.product("ACGT", repeat=6)] + list("ACGTN")
    (folder / "vocab.txt").write_text("\n".join(words))
    EsmTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    config = EsmConfig(
        vocab_size=len(words),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=1,
        mask_token_id=2,
        position_embedding_type="rotary",
    )
    torch.manual_seed(0)
    EsmForMaskedLM(config).save_pretrained(folder)
    return folder


def test_a_slow_kmer_tokenizer_is_placed_from_its_token_texts(nt_style_masked):
    model = load_language_model(_settings(nt_style_masked, "hf-encoder", 64), head="masked")
    assert isinstance(model, LanguageModel) and model.prefix == (3,)
    task = _variant_task(n=8, length=40)
    for r in task.rows.itertuples():
        vt = _variant_tokens(model.tokenize, r.sequence, r.pos, r.ref, r.alt)
        start, end = vt.ref.spans[vt.ref_span[0]]
        assert vt.aligned and vt.ref_span[1] - vt.ref_span[0] == 1 and start <= r.pos < end  # the one k-mer
    batched = score_llr(model, task, batch_size=3)
    np.testing.assert_allclose(batched["score"], score_llr_naive(model, task)["score"], rtol=1e-5, atol=1e-6)


HYENA_FILES = (
    "config.json",
    "configuration_hyena.py",
    "modeling_hyena.py",
    "tokenization_hyena.py",
    "tokenizer_config.json",
)


def _hyena_settings(folder: Path) -> dict:
    entry = spec(folder, "hyena", {"max_tokens": 1024}, trust=True, load={"transformers": ">=4.26"})
    return extraction_settings({"models": {"h": entry}}, "h", {})


def test_real_hyenadna_remote_code_without_its_head_is_not_applicable(shared):
    result = load_language_model(_hyena_settings(shared / "models" / "hyenadna-tiny-1k-ft-anticapt"), head="causal")
    assert isinstance(result, NoLanguageHead) and "HyenaDNAForCausalLM" in result.reason
    assert "lm_head.weight" in result.reason


def test_real_hyenadna_backbone_with_a_seeded_head_scores_through_remote_code(shared, tmp_path):
    """The real tiny-1k backbone weights plus a seeded random lm_head (plumbing: the one-base character
    tokenizer placed from its token texts, no attention mask, right padding of a causal model)."""
    from safetensors.torch import save_file

    real = shared / "models" / "hyenadna-tiny-1k-ft-anticapt"
    for name in HYENA_FILES:
        shutil.copy(real / name, tmp_path / name)
    weights = torch.load(real / "pytorch_model.bin", map_location="cpu", weights_only=True)
    tensors = {f"hyena.{k}": v.clone().contiguous() for k, v in weights.items()}
    vocab, width = tensors["hyena.backbone.embeddings.word_embeddings.weight"].shape
    # a head of the wrong shape is refused by transformers at load (ignore_mismatched_sizes is never set)
    tensors["lm_head.weight"] = torch.zeros(width, vocab)
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        load_language_model(_hyena_settings(tmp_path), head="causal")
    tensors["lm_head.weight"] = torch.randn(vocab, width, generator=torch.Generator().manual_seed(0)) * 0.02
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    model = load_language_model(_hyena_settings(tmp_path), head="causal")
    assert isinstance(model, LanguageModel) and model.suffix == () and not model.takes_attention_mask
    task = _variant_task(n=6, length=30)
    vt = _variant_tokens(
        model.tokenize, task.rows["sequence"][0], int(task.rows["pos"][0]), task.rows["ref"][0], task.rows["alt"][0]
    )
    assert vt.ref_span == (int(task.rows["pos"][0]), int(task.rows["pos"][0]) + 1)  # one token per base
    batched = score_llr(model, task, batch_size=4)
    np.testing.assert_allclose(batched["score"], score_llr_naive(model, task)["score"], rtol=1e-5, atol=1e-6)


def test_the_registry_decides_whether_llr_runs(mistral_causal, shared):
    from geneb.zeroshot.llr import registry_language_model

    head = spec(mistral_causal, "hf-decoder", {"max_tokens": 256})  # family default: causal head, llr on
    no_llr = {**head, "scoring": ["embedding"]}
    shipped = {
        **spec(shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom", "hf-decoder", {"max_tokens": 256}),
        "lm_head": "none",
        "lm_head_source": "classifier checkpoint",
    }
    registry = {"models": {"head": head, "no-llr": no_llr, "shipped": shipped}}
    assert isinstance(registry_language_model(registry, "head"), LanguageModel)
    assert (
        "leaves out llr; lm_head causal (default of family 'hf-decoder')"
        in registry_language_model(registry, "no-llr").reason
    )
    assert "lm_head none (classifier checkpoint)" in registry_language_model(registry, "shipped").reason
