"""geneb.probe.views: every view of a views file probed, each score and prediction row naming its view; the inner-CV
layer rule on training labels only (k-shot: the draw's own rows; 1-shot: the deepest layer); the registry's view of a
run without `views:`."""

from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest

from geneb.extract.cache import SplitEmbeddings, ViewArrays, read_embeddings, write_embeddings
from geneb.extract.step import view_attrs
from geneb.probe.job import fit_probes, write_shot_indices
from geneb.probe.shots import ProbeInputError, build_shots
from geneb.probe.views import _choose_layers, registry_view
from geneb.registry.spec import View, ViewSet
from geneb.tables.scores import _VIEW_COLUMNS, SCHEMA_VERSION, AnalysisInputError, check_scores

TASK = "gue_emp_h3__devtrain"


def _layers(y: np.ndarray, informative: int, n_layers: int = 3, d: int = 8, seed: int = 0) -> dict[int, np.ndarray]:
    """Noise at every layer but `informative`, where the first feature carries the label."""
    rng = np.random.default_rng(seed)
    out = {}
    for layer in range(n_layers):
        x = rng.normal(size=(len(y), d))
        if layer == informative:
            x[:, 0] += 3.0 * (2 * y - 1)
        out[layer] = x
    return out


def _shots(protocols, y, rows, name="geneb-strict"):
    p = protocols[name]
    return build_shots(TASK, name, y, rows, "h", p.settings(), identity="i")


def test_full_regime_picks_the_informative_layer(protocols):
    y = np.arange(200) % 2
    rows = np.arange(200) + 1000
    shots = _shots(protocols, y, rows)
    for informative in (0, 1):
        choices = _choose_layers(_layers(y, informative), y, rows, protocols["geneb-strict"], shots)
        layer, folds, mcc = choices[("full", protocols["geneb-strict"].cv_seed)]
        assert (layer, folds) == (informative, 5) and mcc > 0.8


def test_kshot_choice_reads_only_the_draws_labels_and_1shot_takes_the_deepest(protocols):
    proto = protocols["geneb-strict"]
    y = np.arange(300) % 2
    rows = np.arange(300)
    shots = _shots(protocols, y, rows)
    X = _layers(y, 1)
    base = _choose_layers(X, y, rows, proto, shots)
    drawn = {int(r) for d in shots["draws"] if d["regime"] == "10shot" for r in d["rows"]}
    outside = np.array([r not in drawn for r in rows])
    flipped = y.copy()
    flipped[outside] = 1 - flipped[outside]  # labels beyond the draws change; the draws' own do not
    again = _choose_layers(X, flipped, rows, proto, shots)
    tenshot = [k for k in base if k[0] == "10shot"]
    assert tenshot and all(again[k] == base[k] for k in tenshot)
    assert all(base[k][1] == 5 for k in tenshot)  # 5 folds within the 10 shots per class
    assert again[("full", proto.cv_seed)] != base[("full", proto.cv_seed)]  # the full choice does read them
    onesshot = [k for k in base if k[0] == "1shot"]
    assert onesshot and all(base[k][:2] == (2, 0) for k in onesshot)


def test_registry_view_of_a_run_without_views():
    kmer = registry_view({"model": "kmer-3", "settings": {"family": "kmer", "extraction": {"pooling": "mean"}}}, None)
    assert kmer["view"] == "default" and kmer["layer"] is None and kmer["layer_rule"] == "registry"
    key = {
        "model": "m",
        "settings": {"family": "hf-decoder", "extraction": {"layer": -1, "pooling": "max", "rc": "average"}},
    }
    view = registry_view(key, 4)
    assert (view["layer"], view["depth"], view["pooling"], view["reverse_complement"]) == (4, 1.0, "max", True)
    assert registry_view({**key, "settings": {**key["settings"], "extraction": {"layer": 2}}}, 4)["depth"] == 0.5


@pytest.fixture(scope="module")
def views_file(stage):
    """The stage's kmer-3 file rewritten as a views file of three 'layers' x one pooling: layer 1 is kmer-3, the
    others noise."""
    root, _ = stage
    src = read_embeddings(root / "kmer-3.h5")
    views = ViewSet((0, 1, 2), ("mean",), (False,), 2)
    rng = np.random.default_rng(0)
    arrays, splits = {}, {}
    for split, (_x, row) in src.splits.items():
        splits[split] = SplitEmbeddings(np.zeros((len(row), 0), np.float32), row, src.n_tokens[split])
    for view in views.views():
        per = {
            s: (x if view.layer == 1 else rng.normal(size=x.shape)).astype(np.float32)
            for s, (x, _) in src.splits.items()
        }
        arrays[view.id] = ViewArrays(view_attrs(view, views, key_hash="k", settings_hash="s"), per)
    path = root / "kmer-3-views.h5"
    write_embeddings(path, splits, src.key, views=arrays)
    return path


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_fit_probes_scores_every_view_and_the_inner_cv_choice(stage, probe_config, views_file, protocol):
    root, task_dir = stage
    shots = root / "shots-views" / protocol / f"{TASK}.json"
    write_shot_indices(
        train=task_dir / "train.parquet",
        card=task_dir / "card.json",
        output=shots,
        task=TASK,
        protocol=protocol,
        settings=probe_config[protocol],
    )
    out = root / "views-out" / protocol
    scores = fit_probes(
        train=task_dir / "train.parquet",
        test=task_dir / "test.parquet",
        card=task_dir / "card.json",
        embeddings=views_file,
        shots=shots,
        scores_out=out / "s.parquet",
        predictions_out=out / "p.parquet",
        task=TASK,
        model="kmer-3",
        protocol=protocol,
        settings=probe_config[protocol],
    )
    preds = pd.read_parquet(out / "p.parquet")
    assert (scores["schema_version"] == SCHEMA_VERSION).all()
    for table in (scores, preds):
        assert set(_VIEW_COLUMNS) <= set(table.columns)
        assert set(table["view"]) == {"L0|mean|rc0", "L1|mean|rc0", "L2|mean|rc0", "Lcv|mean|rc0"}
        assert set(table["layer_rule"]) == {"fixed", "inner_cv"}
    check_scores(scores)  # one row per view of each (regime, seed, metric)
    assert scores.loc[scores["layer_rule"] == "fixed", "layer_cv_folds"].isna().all()
    cv = scores[(scores["layer_rule"] == "inner_cv") & (scores["metric"] == "MCC")]
    assert (cv.loc[cv["regime"] == "full", "layer"] == 1).all()  # the informative layer, chosen on training labels
    assert (cv.loc[cv["regime"] == "1shot", "layer_cv_folds"] == 0).all()
    assert cv["layer_depth"].between(0, 1).all()
    fixed = scores[(scores["view"] == "L1|mean|rc0") & (scores["metric"] == "MCC") & (scores["regime"] == "full")]
    assert cv.loc[cv["regime"] == "full", "value"].tolist() == fixed["value"].tolist()
    with h5py.File(views_file) as f:
        assert f["views"]["L2|mean|rc0"].attrs["layer"] == 2 and "view_key" in f["views"]["L2|mean|rc0"].attrs


def test_check_scores_refuses_bad_view_columns():
    row = dict(
        protocol="p",
        model="m",
        task="t",
        category="Promoters",
        regime="full",
        seed=0,
        metric="MCC",
        value=0.5,
        view="L1|mean|rc0",
        layer=1,
        layer_depth=0.5,
        pooling="mean",
        reverse_complement=False,
        layer_rule="fixed",
    )
    ok = pd.DataFrame([row, {**row, "view": "L2|mean|rc0", "layer": 2, "layer_depth": 1.0}])
    check_scores(ok)
    for bad, message in (
        ({"layer": -1}, "absolute index"),
        ({"layer_depth": 1.5}, r"\[0, 1\]"),
        ({"layer_rule": "best"}, "unknown layer_rule"),
    ):
        with pytest.raises(AnalysisInputError, match=message):
            check_scores(pd.DataFrame([{**row, **bad}]))
    with pytest.raises(AnalysisInputError, match="missing view columns"):
        check_scores(pd.DataFrame([row]).drop(columns=["layer_rule"]))
    assert View(3, "max", True).id == "L3|max|rc1"


def test_fit_probes_scores_only_the_views_asked_for(stage, probe_config, views_file):
    """`views` (views.protocols leaves a protocol with the registry view): that view alone, without inner_cv rows;
    a view the file lacks is refused, naming it and the file's views."""
    root, task_dir = stage
    protocol = "geneb-strict"
    shots = root / "shots-one-view" / protocol / f"{TASK}.json"
    common = {
        "train": task_dir / "train.parquet",
        "test": task_dir / "test.parquet",
        "card": task_dir / "card.json",
        "embeddings": views_file,
        "shots": shots,
        "task": TASK,
        "model": "kmer-3",
        "protocol": protocol,
        "settings": probe_config[protocol],
    }
    write_shot_indices(
        train=common["train"],
        card=common["card"],
        output=shots,
        task=TASK,
        protocol=protocol,
        settings=common["settings"],
    )
    out = root / "one-view-out"
    scores = fit_probes(
        **common, scores_out=out / "s.parquet", predictions_out=out / "p.parquet", views=["L2|mean|rc0"]
    )
    for table in (scores, pd.read_parquet(out / "p.parquet")):
        assert set(table["view"]) == {"L2|mean|rc0"} and set(table["layer_rule"]) == {"fixed"}
    with pytest.raises(ProbeInputError, match=r"views \['L9\|mean\|rc0'\] are not in .*L0\|mean\|rc0"):
        fit_probes(**common, scores_out=out / "x.parquet", predictions_out=out / "y.parquet", views=["L9|mean|rc0"])
    assert not (out / "x.parquet").exists()
