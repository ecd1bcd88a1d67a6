"""Run inside the lucaone env's venv (transformers 4.41.2 + lucaone 1.1.1) by test_lucaone.py:

    <venv python> lucaone_env.py REPO WORKDIR

builds a LucaOne stand-in checkpoint in WORKDIR/checkpoint the way the authors' conversion script wrote the hub
folders (LucaOne/LucaOne branch huggingface, src/scripts/convert_weights.py: `LucaGPLMForMaskedLM` of the lucaone
package saved with `save_pretrained`, `auto_map` in config.json and tokenizer_config.json, the package's four code
files copied beside the weights), from the real configuration (vocabulary 39, 40 heads of width 64 -> here 4 heads
of width 8, 20 blocks -> 2, hidden 2560 -> 32; rotary positions, token-type table, no embedding layer norm, a last
layer norm, token dropout), loads it through the registry (the committed LucaOne-default-step36M entry with
`source.kind: local` and the stand-in's width), and writes WORKDIR/result.json: GENEB's vectors and counts, the
same sequences through a plain forward pass of the package's own classes (masked mean written out below), token
ids, and what the checks measured. Prints nothing on success; any exception exits non-zero with its traceback.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import yaml

MODEL = "LucaOne-default-step36M"
WIDTH = 32
#: a fixed sequence for the token ids: upper and lower case, U (read as T), N, and one IUPAC code (R, read as N)
FIXED = "ACGTNacgtuR"
#: rows of different lengths (one beyond a batch mate's length, so right padding is exercised)
SEQS = ["ACGTTGCAAGGCTTAC" * 3, "GATTACA" * 20, "TTGACA" + "N" * 5 + "ACGTTGCA" * 9, "CCGGAATT" * 2]


def build_checkpoint(folder: Path) -> None:
    """The stand-in hub folder (see the module docstring); weights random with a fixed seed."""
    import lucaone
    from lucaone import LucaGPLMConfig, LucaGPLMForMaskedLM, LucaGPLMTokenizer

    torch.manual_seed(0)
    config = LucaGPLMConfig(
        vocab_size=39,
        hidden_size=WIDTH,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=4096,
        type_vocab_size=2,
        no_position_embeddings=True,
        no_token_type_embeddings=False,
        use_embed_layer_norm=False,
        use_last_layer_norm=True,
        token_dropout=True,
        embed_scale=1.0,
        alphabet="gene_prot",
        tie_word_embeddings=False,
    )
    config.auto_map = {
        "AutoConfig": "configuration_lucaone.LucaGPLMConfig",
        "AutoTokenizer": ["tokenization_lucaone.LucaGPLMTokenizer", None],
        "AutoModel": "modeling_lucaone.LucaGPLMModel",
        "AutoModelForMaskedLM": "modeling_lucaone.LucaGPLMForMaskedLM",
    }
    model = LucaGPLMForMaskedLM(config)
    with torch.no_grad():  # large random weights, so that a wrong token, type or mask changes the vectors
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(folder)
    LucaGPLMTokenizer(vocab_type="gene_prot").save_pretrained(folder)
    tok_cfg = json.loads((folder / "tokenizer_config.json").read_text())
    tok_cfg.update(
        tokenizer_class="LucaGPLMTokenizer",
        auto_map={"AutoTokenizer": ["tokenization_lucaone.LucaGPLMTokenizer", None]},
    )
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
    package = Path(lucaone.__file__).parent
    for name in ("__init__.py", "configuration_lucaone.py", "modeling_lucaone.py", "tokenization_lucaone.py"):
        shutil.copy(package / name, folder / name)


def settings_for(repo: Path, folder: Path, workdir: Path, **extraction) -> dict:
    """extraction_settings of the committed LucaOne entry, its source the stand-in folder, its width 32."""
    from geneb.registry.load import extraction_settings, load_registry

    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    entry = doc["models"][MODEL]
    entry["source"] = {"kind": "local", "path": str(folder)}
    entry["extraction"] = {**entry["extraction"], "embedding_dim": WIDTH, **extraction}
    sheet = workdir / f"models-{len(list(workdir.glob('models-*.yaml')))}.yaml"
    sheet.write_text(yaml.safe_dump(doc))
    alphabet = yaml.safe_load((repo / "config/config.yaml").read_text())["alphabet"]
    return extraction_settings(load_registry(sheet), MODEL, alphabet)


def plain_forward(folder: Path, seqs: list[str]) -> np.ndarray:
    """The pooled vectors without GENEB: the package's tokenizer and LucaGPLMModel (not the folder's remote
    code), one right-padded batch of [CLS] + ids + [SEP] with token type 0, the mean of last_hidden_state over the
    attention mask (CLS and SEP included: the paper's reference pooling)."""
    from lucaone import LucaGPLMModel, LucaGPLMTokenizer

    tok = LucaGPLMTokenizer(vocab_type="gene_prot")
    model = LucaGPLMModel.from_pretrained(folder).eval()
    ids = [tok(s, seq_type="gene", add_special_tokens=True)["input_ids"] for s in seqs]
    width = max(len(i) for i in ids)
    input_ids = torch.zeros(len(ids), width, dtype=torch.long)  # [PAD] is 0
    mask = torch.zeros(len(ids), width, dtype=torch.long)
    for row, i in enumerate(ids):
        input_ids[row, : len(i)] = torch.tensor(i)
        mask[row, : len(i)] = 1
    with torch.no_grad():
        hidden = model(input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids))
    hidden = hidden.last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return ((hidden * m).sum(dim=1) / m.sum(dim=1)).numpy()


def main(repo: Path, workdir: Path) -> None:
    from geneb.core.errors import UnknownTokenError
    from geneb.encoders.engine.invariance import check_batch_invariance, check_padding_invariance
    from geneb.registry.families import build

    folder = workdir / "checkpoint"
    build_checkpoint(folder)
    settings = settings_for(repo, folder, workdir)
    enc = build(settings, device="cpu", batch_size=4, progress=False)
    res = enc.embed(SEQS)
    from lucaone import LucaGPLMTokenizer

    authors = LucaGPLMTokenizer(vocab_type="gene_prot")(FIXED, seq_type="gene")
    (chunk,) = enc.make_chunks([FIXED], [0])[0]
    iupac = enc.embed(["ACGTRYKMACGT", "ACGTNNACGT"])
    try:
        build(settings_for(repo, folder, workdir, unk_policy="error"), device="cpu", progress=False).embed(["ACGTRA"])
        strict = "accepted"
    except UnknownTokenError as err:
        strict = str(err)
    try:
        enc.embed(["ACGT ACGT"])
        spaced = "accepted"
    except ValueError as err:
        spaced = str(err)
    long = enc.embed(["ACGT" * 1250])  # 5,000 nt: beyond the paper's 4,096-token cap (long_policy truncate)
    identity = enc.identity()
    out = {
        "identity": {
            k: identity[k]
            for k in (
                "adapter",
                "special_prefix",
                "special_suffix",
                "max_tokens",
                "pad_id",
                "padding",
                "attention_mask",
                "layer_resolved",
                "hidden_size",
                "vocab_size",
                "num_embeddings",
                "seq_type",
                "token_type_id",
                "model_class",
                "tokenizer",
                "weights_format",
            )
        },
        "settings": {
            "family": settings["family"],
            "source_kind": settings["source"]["kind"],
            "extraction": settings["extraction"],
            "trust_remote_code": settings["trust_remote_code"],
        },
        "geneb": res.embeddings.tolist(),
        "n_tokens": res.n_tokens.tolist(),
        "plain": plain_forward(folder, SEQS).tolist(),
        "fixed_ids": enc._tokenize([FIXED])[0],
        "fixed_chunk": [int(i) for i in chunk.ids],
        "authors_fixed_ids": [int(i) for i in authors["input_ids"]],
        "authors_token_types": [int(i) for i in authors["token_type_ids"]],
        "alone": [enc.embed([s]).embeddings[0].tolist() for s in SEQS],
        "padding_check": check_padding_invariance(enc, SEQS[3], SEQS[:3]).max_abs_diff,
        "batch_check": check_batch_invariance(enc, SEQS, batch_sizes=(1, 3)).max_abs_diff,
        "iupac_counters": [iupac.counters.unknown_rows, iupac.counters.unknown_tokens],
        "strict": strict,
        "long": {
            "n_tokens": long.n_tokens.tolist(),
            "truncated": long.truncated.tolist(),
            "n_chunks": long.n_chunks.tolist(),
        },
        "spaced": spaced,
    }
    (workdir / "result.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
