"""`evaluate_zeroshot` end to end (geneb.api.zeroshot): a registry k-mer model, a real checkpoint, the
Markov baselines and an added scorer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import geneb
from extraction_support import random_dna
from geneb.api.zeroshot import ZeroShotResult, evaluate_zeroshot
from geneb.zeroshot.scorers import Background, BackgroundLeakError
from geneb.zeroshot.task import NotApplicable, ZeroShotTask, row_scores


def _variant_task(n: int = 12, length: int = 60) -> ZeroShotTask:
    seqs = [random_dna(length, 100 + i) for i in range(n)]
    pos = length // 2
    rows = pd.DataFrame(
        {
            "sequence": seqs,
            "pos": pos,
            "ref": [s[pos] for s in seqs],
            "alt": [{"A": "C", "C": "G", "G": "T", "T": "A"}[s[pos]] for s in seqs],
            "label": [0, 1] * (n // 2),
            "group": ["chr1", "chr2"] * (n // 2),
        }
    )
    return ZeroShotTask(name="snvs", kind="variant", rows=rows, data_sha256="0" * 64, source_tasks=("genome-windows",))


def _paired_task(n: int = 6) -> ZeroShotTask:
    a = [random_dna(50, 200 + i) for i in range(n)]
    rows = pd.DataFrame({"sequence_a": a, "sequence_b": [s[::-1] for s in a]})
    return ZeroShotTask(name="pairs", kind="paired", rows=rows, data_sha256="0" * 64)


BACKGROUND = Background(tasks=("promoters",), sequences=tuple(random_dna(200, i) for i in range(10)))


def test_kmer_registry_model_with_markov_baselines():
    result = evaluate_zeroshot(
        "kmer-3", [_variant_task(), _paired_task()], markov_orders=(0, 2), background=BACKGROUND, n_boot=50, seed=4
    )
    assert isinstance(result, ZeroShotResult)
    assert list(result.scores.columns) == ["model", "task", "row", "scorer", "score"]
    per_task = result.scores.groupby(["task", "scorer"]).size().to_dict()
    assert per_task == {
        ("snvs", "embedding-cosine"): 12, ("snvs", "embedding-euclidean"): 12, ("snvs", "markov-0"): 12,
        ("snvs", "markov-2"): 12, ("pairs", "markov-0"): 6, ("pairs", "markov-2"): 6,
    }  # fmt: skip
    pooled_only = "KmerEncoder gives pooled vectors only: no per-token states at the variant"
    assert result.not_applicable == [
        NotApplicable("kmer-3", "snvs", s, pooled_only)
        for s in ("embedding-cosine-at-variant", "embedding-euclidean-at-variant")
    ] + [
        NotApplicable("kmer-3", "pairs", s, "a paired task needs a likelihood; an embedding distance gives no preference")
        for s in ("embedding-cosine", "embedding-euclidean", "embedding-cosine-at-variant", "embedding-euclidean-at-variant")
    ]  # fmt: skip
    m = result.metrics
    assert (m["model"] == "kmer-3").all() and (m["seed"] == 4).all() and (m["n_boot"] == 50).all()
    snv = m[(m["task"] == "snvs") & (m["scorer"] == "markov-2")]
    assert set(snv["group"]) == {"all", "chr1", "chr2", "weighted-mean"}
    assert set(snv["metric"]) == {"auroc", "auprc", "auroc_within_strata"}
    assert set(snv.loc[snv["metric"] == "auroc_within_strata", "group"]) == {"all"}  # all rows only
    assert set(snv.loc[snv["group"] == "all", "resample_unit"]) == {"groups"}  # the chromosomes are its groups
    pairs = m[m["task"] == "pairs"]
    assert set(pairs["metric"]) == {"paired_accuracy"}
    assert pairs[pairs["scorer"] == "markov-2"]["p_value"].notna().all()
    # order 0 sees only composition, the same in a sequence and its reversal: every row a tie, no sign test
    order0 = pairs[pairs["scorer"] == "markov-0"].iloc[0]
    assert order0["value"] == 0.5 and np.isnan(order0["p_value"]) and "tie" in order0["note"]
    assert result.provenance["background_tasks"] == ["promoters"] and result.provenance["seed"] == 4


def test_a_leaking_background_or_a_missing_one_is_refused():
    leak = Background(tasks=("genome-windows",), sequences=BACKGROUND.sequences)
    with pytest.raises(BackgroundLeakError, match="genome-windows"):
        evaluate_zeroshot("kmer-3", [_variant_task()], scorers=(), markov_orders=(1,), background=leak, n_boot=10)
    with pytest.raises(ValueError, match="need a declared background"):
        evaluate_zeroshot("kmer-3", [_variant_task()], markov_orders=(1,))
    with pytest.raises(ValueError, match="unknown zero-shot scorer"):
        evaluate_zeroshot("kmer-3", [_variant_task()], scorers=("lr",))


def test_a_scorer_is_added_with_one_entry_and_the_package_exports_the_entry_point():
    def constant(model, task):
        return row_scores(task, "llr", np.arange(task.n, dtype=float))

    result = geneb.evaluate_zeroshot("kmer-3", [_variant_task()], scorers={"llr": constant}, n_boot=10)
    assert set(result.scores["scorer"]) == {"llr"} and len(result.scores) == 12


def test_a_real_checkpoint_end_to_end(zoo, tmp_path):
    settings = zoo.settings("mistral-dna")
    result = evaluate_zeroshot(settings, [_variant_task(n=6), _paired_task(2)], n_boot=20, workdir=tmp_path)
    assert set(result.scores["model"]) == {"tiny-mistral-dna"}
    cosine = result.scores[result.scores["scorer"] == "embedding-cosine"]["score"]
    assert len(cosine) == 6 and (cosine > 0).all()
    at_variant = result.scores[result.scores["scorer"] == "embedding-cosine-at-variant"]["score"]
    assert len(at_variant) == 6 and (at_variant > 0).all()  # BPE offsets place the variant on its token
    assert len(result.not_applicable) == 4 and {n.task for n in result.not_applicable} == {"pairs"}
    assert result.provenance["settings_hash"]


def test_the_zero_shot_modules_import_no_torch():
    import subprocess
    import sys

    code = (
        "import sys, geneb.api.zeroshot, geneb.zeroshot.scorers, geneb.zeroshot.tables; print('torch' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"
