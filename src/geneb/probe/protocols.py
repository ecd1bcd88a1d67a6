"""The two named probing protocols, built from the `probe:` section of config/config.yaml.

`geneb-paper` reproduces the published protocol; `geneb-strict` is the one GENEB recommends. Both are the same
data structure with every setting written out (docs/protocols.md explains each value and its source), so a
protocol is exactly its config and its `config_hash`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression

from geneb.core.paths import schema_errors, section
from geneb.core.provenance import stable_hash
from geneb.probe.shots import ProtocolConfigError

_PROTOCOL_NAMES = ("geneb-paper", "geneb-strict")
#: cv_scoring -> the scikit-learn scorer of the inner CV
CV_SCORERS = {"MCC": "matthews_corrcoef", "log_loss": "neg_log_loss"}
#: class_weight balanced_if_imbalanced weights classes when the largest training class has at least this many
#: times the rows of the smallest (GENEB's choice by measurement: balanced weights cost 0.04 MCC on a 2:1:1 task
#: and help on strongly imbalanced ones; bench/probe_quality.py, docs/protocols.md)
_IMBALANCE_RATIO = 3.0
_SETTING_KEYS = (
    "draw",
    "standardize",
    "solver",
    "penalty",
    "C",
    "C_grid",
    "cv_folds",
    "cv_seed",
    "cv_scoring",
    "class_weight",
    "tol",
    "max_iter",
    "seeds",
    "few_shot_k",
    "report_full_per_seed",
    "max_train",
    "subsample_seed",
    "bootstrap",
    "dedup_test",
    "f1_labels",
)


@dataclass(frozen=True)
class Bootstrap:
    """Settings of the bootstrap CI on every test MCC (scipy.stats.bootstrap over test rows)."""

    n_resamples: int
    seed: int
    confidence: float
    method: str


@dataclass(frozen=True)
class Protocol:
    """One probing protocol, every output-affecting setting explicit.

    draw: "paper" (`sampling.paper_draw`) or "nested" (`sampling.nested_draw`). standardize: StandardScaler
    fitted on the training split before the probe. solver, penalty ("l2"), tol, max_iter: LogisticRegression
    settings. class_weight: None, "balanced", or "balanced_if_imbalanced" (balanced when the task's training
    classes are at least IMBALANCE_RATIO apart in size, else None; `class_weight_for`), for every regime. C: the fixed inverse regularisation strength (every few-shot fit;
    the full regime too when C_grid is empty). C_grid: ascending grid searched by stratified inner CV on the
    training split in the full regime (empty: no tuning). cv_folds, cv_seed: StratifiedKFold(shuffle=True).
    cv_scoring: "MCC" or "log_loss" (CV_SCORERS). seeds: draw / probe seeds. few_shot_k: the k of each k-shot regime. report_full_per_seed:
    the full regime, which has no randomness left (lbfgs ignores random_state), is fitted once and reported
    under every seed (paper) or once under cv_seed (strict). max_train: training-split cap (paper: 100,000;
    None = no cap), subsample_seed its seed. bootstrap: CI settings. dedup_test: also score every fit on the
    test split without its within-split duplicate rows (task card `dedup_drop_rows`), as metrics `MCC_dedup`,
    `Acc_dedup`, `F1_dedup` beside the scores on the split as given. f1_labels: the classes macro-F1
    averages over, "present" (scikit-learn's default, the paper's) or "task" (every class of the task; see
    `metrics.label_scores`).
    """

    name: str
    draw: str
    standardize: bool
    solver: str
    penalty: str
    C: float
    C_grid: tuple[float, ...]
    cv_folds: int
    cv_seed: int
    cv_scoring: str
    class_weight: str | None
    tol: float
    max_iter: int
    seeds: tuple[int, ...]
    few_shot_k: tuple[int, ...]
    report_full_per_seed: bool
    max_train: int | None
    subsample_seed: int
    bootstrap: Bootstrap
    dedup_test: bool
    f1_labels: str

    @property
    def regimes(self) -> tuple[str, ...]:
        """Regime names in output order: "full", then "{k}shot" for each k in few_shot_k."""
        return ("full",) + tuple(f"{k}shot" for k in self.few_shot_k)

    @property
    def tunes_C(self) -> bool:
        """Whether the full regime chooses C by inner cross-validation."""
        return len(self.C_grid) > 0

    def settings(self) -> dict[str, Any]:
        """The settings as a plain dict (the config section), for hashing and provenance."""
        d = asdict(self)
        d.pop("name")
        d["C_grid"] = list(self.C_grid)
        d["seeds"] = list(self.seeds)
        d["few_shot_k"] = list(self.few_shot_k)
        return d

    def config_hash(self) -> str:
        """12-hex sha256 of (name, settings): the `config_hash` column of every output row."""
        return stable_hash({"protocol": self.name, "settings": self.settings()})

    def class_weight_for(self, y: np.ndarray) -> str | None:
        """The scikit-learn class_weight for a task whose training labels are `y` (shape (n,)): the setting
        itself, or for "balanced_if_imbalanced" "balanced" when max/min class count >= IMBALANCE_RATIO."""
        if self.class_weight != "balanced_if_imbalanced":
            return self.class_weight
        counts = np.unique(np.asarray(y), return_counts=True)[1]
        return "balanced" if counts.max() >= _IMBALANCE_RATIO * counts.min() else None

    def logistic_regression(self, C: float, seed: int, class_weight: str | None) -> LogisticRegression:
        """A LogisticRegression with every hyperparameter set explicitly (none left to library defaults);
        class_weight: `class_weight_for` of the task.

        The L2 penalty is passed as `l1_ratio=0.0` on scikit-learn >= 1.8 (where `penalty=` is deprecated) and
        as `penalty="l2"` before. `random_state=seed` is recorded though lbfgs ignores it (the paper passes it).
        """
        return LogisticRegression(
            C=C,
            tol=self.tol,
            max_iter=self.max_iter,
            solver=self.solver,
            class_weight=class_weight,
            random_state=seed,
            **penalty_kwargs(),
        )


def penalty_kwargs() -> dict[str, Any]:
    """The scikit-learn keyword for an L2 penalty in the installed version (see scikit-learn default drift in
    docs/footguns.md)."""
    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 0.0} if (major, minor) >= (1, 8) else {"penalty": "l2"}


def _need(cond: bool, name: str, msg: str) -> None:
    if not cond:
        raise ProtocolConfigError(f"probe protocol {name!r}: {msg}")


def _schema_problem(settings: dict[str, Any]) -> str | None:
    """The first problem of one protocol's settings against `$defs/probe_protocol` of
    workflow/schemas/config.schema.yaml (the workflow validates the same section), or None when it validates.
    Missing and unknown keys are reported together ("missing settings [...]", "unknown settings [...]");
    any other problem as "<key path>: <jsonschema message>"."""
    errors = schema_errors(settings, section("config", "probe_protocol"))
    if not errors:
        return None
    at_top = {e.validator for e in errors if not e.path}
    if "required" in at_top:
        return f"missing settings {[k for k in _SETTING_KEYS if k not in settings]}"
    if "additionalProperties" in at_top:
        return f"unknown settings {sorted(set(settings) - set(_SETTING_KEYS))}"
    e = errors[0]
    where = "/".join(map(str, e.path))
    return f"{where}: {e.message}" if where else e.message


def from_config(name: str, settings: dict[str, Any]) -> Protocol:
    """Build and validate a Protocol from its config section (`config["probe"][name]`).

    The section is validated against the workflow's schema (`_schema_problem`: every key of SETTING_KEYS
    present and no other, no silent defaults, each value's type and range), then by the rules a schema
    cannot express: C_grid ascending (the schema's enum of few_shot_k is the k of the k-shot regimes GENEB's
    analyses know, so other k are refused before any job runs). Raises
    ProtocolConfigError naming the protocol and the offending key and value.
    """
    _need(name in _PROTOCOL_NAMES, name, f"unknown protocol; known: {_PROTOCOL_NAMES}")
    _need(isinstance(settings, dict), name, f"settings must be a mapping, got {type(settings).__name__}")
    problem = _schema_problem(settings)
    _need(problem is None, name, str(problem))
    s = settings
    grid = [float(c) for c in s["C_grid"]]
    _need(grid == sorted(set(grid)), name, f"C_grid must be strictly ascending positive values, got {s['C_grid']!r}")
    ks = list(s["few_shot_k"])
    seeds = list(s["seeds"])
    b = s["bootstrap"]
    return Protocol(
        name=name,
        draw=s["draw"],
        standardize=bool(s["standardize"]),
        solver=s["solver"],
        penalty="l2",
        C=float(s["C"]),
        C_grid=tuple(grid),
        cv_folds=int(s["cv_folds"]),
        cv_seed=int(s["cv_seed"]),
        cv_scoring=s["cv_scoring"],
        class_weight=s["class_weight"],
        tol=float(s["tol"]),
        max_iter=int(s["max_iter"]),
        seeds=tuple(int(x) for x in seeds),
        few_shot_k=tuple(int(k) for k in ks),
        report_full_per_seed=bool(s["report_full_per_seed"]),
        max_train=s["max_train"],
        subsample_seed=int(s["subsample_seed"]),
        bootstrap=Bootstrap(int(b["n_resamples"]), int(b["seed"]), float(b["confidence"]), b["method"]),
        dedup_test=s["dedup_test"],
        f1_labels=s["f1_labels"],
    )
