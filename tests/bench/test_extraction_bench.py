"""bench/extraction.py: its doc writer keeps the other sections, and its FLOP accounting (the MFU numerator)."""

from __future__ import annotations

import importlib.util
import sys

import pytest


@pytest.fixture(scope="module")
def bench(repo):
    sys.path.insert(0, str(repo / "bench"))  # extraction.py imports its helper module from its own folder
    try:
        spec = importlib.util.spec_from_file_location("bench_extraction", repo / "bench" / "extraction.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(repo / "bench"))


def test_sections_are_replaced_in_place_and_new_ones_follow_the_previous(bench, tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# P\n\n## Probing\n\nprobe text\n\n## Extraction\n\nold\n\n## DAG scale\n\ndag text\n")
    bench.write_sections(
        {
            "## Extraction": "## Extraction\n\nnew\n",
            "## Extraction at realistic sizes": "## Extraction at realistic sizes\n\nbig\n",
        },
        doc,
    )
    text = doc.read_text()
    assert "old" not in text and "probe text" in text and "dag text" in text
    assert text.index("## Probing") < text.index("new") < text.index("big") < text.index("## DAG scale")
    bench.write_sections({"## Extraction on GPU": "## Extraction on GPU\n\ngpu\n"}, doc)  # no previous: appended
    assert doc.read_text().rstrip().endswith("gpu") and doc.read_text().count("## Extraction\n") == 1


def test_flops_count_dense_weights_per_token_and_attention_per_chunk(bench, tmp_path):
    from extraction_lib import attention_flops, per_token_params, useful_flops
    from transformers import EsmModel

    from geneb.encoders.families.random_init import _build_random_esm as build_random_esm

    config = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    model = EsmModel.from_pretrained(build_random_esm({"config": {**config, "max_position_embeddings": 40}}, tmp_path))
    layer = sum(p.numel() for p in model.encoder.layer[0].parameters())
    final_norm = sum(p.numel() for p in model.encoder.emb_layer_norm_after.parameters())
    assert per_token_params(model) == 2 * layer + final_norm  # no embedding tables, no pooler
    lengths = [3, 10]
    assert attention_flops(model, lengths) == 4 * 2 * 32 * (9 + 100)
    assert useful_flops(model, lengths) == 2 * per_token_params(model) * 13 + attention_flops(model, lengths)
    assert bench.padded_tokens([3, 10, 4], [[0, 2], [1]]) == 2 * 4 + 10
    assert bench.padded_tokens([3, 10, 4], [[0, 2], [1]], width=16) == 3 * 16


def test_the_default_plan_is_reported_against_the_best_plan_of_each_model(bench):
    import pandas as pd

    sweep = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "plan": ["batch_size=8", "batch_size=64", "default (by_device: batch_tokens=2048)", "batch_size=8",
                     "default (by_device: batch_tokens=1024)"],
            "MFU": [0.7, 0.3, 0.35, 0.1, 0.1],
        }
    )  # fmt: skip
    assert bench.default_vs_best(sweep) == {"a": 0.5, "b": 1.0}
    assert bench.GOAL_DEFAULT_VS_BEST == 0.75
