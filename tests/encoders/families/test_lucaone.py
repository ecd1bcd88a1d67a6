"""The lucaone family (geneb.encoders.families.lucaone) on a faithful stand-in of LucaOne-default-step36M, in the lucaone env.

The stand-in is the lucaone package's own `LucaGPLMForMaskedLM` with the real configuration shrunk (2 blocks of
width 32 and 4 heads, same layer types), saved as the authors' conversion script saved the hub folders (weights,
`auto_map`, the four code files), so the adapter loads it through the checkpoint's remote code exactly as it would
load the hub snapshot. It runs in the lucaone env's venv (transformers 4.41.2 + lucaone 1.1.1; `geneb env build
lucaone`; scripts/test.sh does not build it) through `lucaone_env.py`, once per module; these tests read what
it measured. Without that venv they skip, naming the build command; the registry test below runs anywhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from geneb.core import envs
from geneb.core.errors import MissingPackageError
from geneb.registry.families import FAMILIES, build
from geneb.registry.load import extraction_settings, load_registry

HERE = Path(__file__).resolve().parent
MODEL = "LucaOne-default-step36M"


@pytest.fixture(scope="module")
def measured(repo, tmp_path_factory):
    """What lucaone_env.py measured in the lucaone venv (its result.json), or a skip naming the build command."""
    try:
        venv = envs.python_for_env("lucaone").parent.parent
    except envs.EnvError:
        pytest.skip(
            f"env lucaone is not built under {envs._cache_dir()} for the current envs/lucaone.yaml; run "
            "`geneb env build lucaone` (1.2-3.7 min here; scripts/test.sh does not build it)"
        )
    work = tmp_path_factory.mktemp("lucaone")
    env = {
        **os.environ,
        "PYTHONPATH": str(repo / "src"),  # this checkout's geneb, whichever checkout the venv was built from
        "HF_MODULES_CACHE": str(work / "hf_modules"),  # the remote code is copied here, not into ~/.cache
        "HF_HUB_OFFLINE": "1",
    }
    proc = subprocess.run(
        [str(venv / "bin" / "python"), str(HERE / "lucaone_env.py"), str(repo), str(work)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((work / "result.json").read_text())


def test_the_registry_entry_resolves_to_the_lucaone_family_in_its_env(repo, tmp_path):
    """The paper row is served (family lucaone, env lucaone, the paper's reference extraction), and outside the
    lucaone env building it names the missing package instead of failing inside transformers."""
    registry = load_registry(repo / "config/models.yaml")
    spec = registry.spec(MODEL)
    assert spec.family == "lucaone" and spec.env_name == "lucaone" and spec.trust_remote_code
    assert FAMILIES["lucaone"].requires == {"lucaone": "lucaone"}
    assert envs.read_env("lucaone").provides("lucaone") and envs.read_env("lucaone").transformers == "4.41.2"
    raw = registry.raw["models"][MODEL]
    assert raw["extraction"]["max_tokens"] == 4096 and raw["context_tokens"] == 1280  # beyond_trained_context
    assert "beyond_trained_context" in raw
    doc = {"models": {MODEL: {**raw, "source": {"kind": "local", "path": str(tmp_path)}}}}
    settings = extraction_settings(doc, MODEL, {})
    if importlib.util.find_spec("lucaone") is not None:
        pytest.skip("the lucaone package is installed in this interpreter (the refusal needs an env without it)")
    with pytest.raises(MissingPackageError, match=rf"model {MODEL} needs the optional package 'lucaone'"):
        build(settings, progress=False)


def test_the_stand_in_loads_through_the_registry_with_the_paper_defaults(measured):
    ident, settings = measured["identity"], measured["settings"]
    assert settings["family"] == "lucaone" and settings["source_kind"] == "local" and settings["trust_remote_code"]
    ext = settings["extraction"]
    assert (ext["pooling"], ext["layer"], ext["exclude_special_tokens"], ext["max_tokens"], ext["long_policy"]) == (
        "mean",
        -1,
        False,
        4096,
        "truncate",
    )
    assert ident["adapter"] == "LucaOneEncoder" and ident["model_class"] == "LucaGPLMModel"  # AutoModel, remote code
    assert ident["tokenizer"] == "LucaGPLMTokenizer" and ident["weights_format"] == "safetensors"
    assert (ident["special_prefix"], ident["special_suffix"], ident["pad_id"]) == ([2], [3], 0)  # [CLS], [SEP], [PAD]
    assert ident["attention_mask"] and ident["padding"].startswith("right")
    assert (ident["seq_type"], ident["token_type_id"], ident["layer_resolved"]) == ("gene", 0, "last_hidden_state")
    assert (ident["hidden_size"], ident["vocab_size"], ident["max_tokens"]) == (32, 39, 4096)


def test_token_ids_of_a_fixed_sequence(measured):
    """A/C/G/T(U)/N are the gene_prot vocabulary's digit tokens 5..9 (never the protein letters: 'A' alone would be
    alanine, id 11); lower case reads as upper case, U as T, the IUPAC R as N; GENEB's chunk equals the authors'
    tokenizer call, [CLS] 2 ... [SEP] 3, all of token type 0."""
    body = [5, 7, 8, 6, 9, 5, 7, 8, 6, 6, 9]  # A C G T N a c g t u R
    assert measured["fixed_ids"] == body
    assert measured["fixed_chunk"] == [2, *body, 3] == measured["authors_fixed_ids"]
    assert measured["authors_token_types"] == [0] * (len(body) + 2)


def test_pooled_vectors_equal_a_plain_masked_mean_of_the_package_model(measured):
    """GENEB's vectors = a right-padded batch through the lucaone package's LucaGPLMModel (not the checkpoint's
    copy of the code), averaged over the attention mask by hand (lucaone_env.plain_forward), to 1e-5."""
    geneb, plain = np.array(measured["geneb"]), np.array(measured["plain"])
    assert geneb.shape == (4, 32) and np.abs(geneb).max() > 0.1
    np.testing.assert_allclose(geneb, plain, rtol=0, atol=1e-5)
    assert measured["n_tokens"] == [50, 142, 85, 18]  # every nucleotide plus [CLS] and [SEP] pooled


def test_padding_and_batch_invariance(measured):
    alone, batched = np.array(measured["alone"]), np.array(measured["geneb"])
    np.testing.assert_allclose(alone, batched, rtol=0, atol=1e-5)
    assert measured["padding_check"] <= 1e-5 and measured["batch_check"] <= 1e-5


def test_letters_read_as_n_are_counted_and_refused_under_unk_policy_error(measured):
    """R, Y, K, M reach LucaOne as N (gene_seq_replace): counted like UNK (1 row, 4 letters; N itself is not)."""
    assert measured["iupac_counters"] == [1, 4]
    assert "1 letters outside A/C/G/T/U/N (read as N) in 1 rows (rows 0)" in measured["strict"]
    assert "character ' ' at position 4 of a sequence is not a letter" in measured["spaced"]


def test_a_row_beyond_the_4096_token_cap_is_truncated(measured):
    assert measured["long"] == {"n_tokens": [4096], "truncated": [True], "n_chunks": [1]}
