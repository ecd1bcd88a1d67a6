"""The shortcut family: feature groups probed like a model (geneb.encoders.families.shortcut)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from geneb.encoders.families.shortcut import ShortcutEncoder
from geneb.encoders.protocol import Encoder
from geneb.extract.step import build_encoder
from geneb.registry.families import family
from geneb.registry.load import extraction_settings, load_registry

SHORTCUT_MODELS = ("shortcut-length", "shortcut-gc", "shortcut-mono", "shortcut-di", "shortcut-tri", "shortcut-cpg-oe")


def test_features_units_and_shapes():
    enc = ShortcutEncoder(("length", "gc", "cpg_oe"))
    res = enc.embed(["ACGT" * 250, "GGCC", "AATT"])
    assert res.embeddings.dtype == np.float32 and res.embeddings.shape == (3, 3)
    assert res.embeddings[0, 0] == pytest.approx(1.0)  # 1,000 bases = 1 kb
    assert res.embeddings[1, 1] == pytest.approx(1.0) and res.embeddings[2, 1] == pytest.approx(0.0)
    # AATT has no C and no G: CpG o/e undefined -> 0.0, the row flagged empty
    assert res.embeddings[2, 2] == 0.0 and res.empty.tolist() == [False, False, True]
    assert res.n_tokens.tolist() == [1000, 4, 4]


def test_all_n_row_is_zero_flagged_and_counted_deterministically():
    enc = ShortcutEncoder(("mono", "di"))
    a = enc.embed(["NNNN", "ACGN"], rows=[7, 8])
    b = enc.embed(["NNNN", "ACGN"], rows=[7, 8])
    assert np.array_equal(a.embeddings, b.embeddings)
    assert np.all(a.embeddings[0] == 0.0) and a.empty.tolist() == [True, False]
    assert np.isfinite(a.embeddings).all()
    assert a.n_tokens.tolist() == [0, 3]  # 0 only on the empty row
    assert a.counters.unknown_tokens == 5 and a.counters.unknown_rows == 2


def test_bad_groups_and_bad_input_are_refused():
    with pytest.raises(ValueError, match="distinct names"):
        ShortcutEncoder(("gc", "gc"))
    with pytest.raises(ValueError, match="distinct names"):
        ShortcutEncoder(("gcc",))
    with pytest.raises(TypeError):
        ShortcutEncoder(("gc",)).embed("ACGT")


def test_registry_entries_build_without_torch(repo):
    registry = load_registry(repo / "config" / "models.yaml")
    had_torch = "torch" in sys.modules
    for model in SHORTCUT_MODELS:
        settings = extraction_settings(registry, model, {})
        assert settings["family"] == "shortcut"
        enc = build_encoder(settings, progress=False)
        assert isinstance(enc, Encoder)
        assert enc.embed(["ACGTACGT"]).embeddings.shape[0] == 1
    assert family("shortcut").uses_torch is False
    if not had_torch:
        assert "torch" not in sys.modules
