"""The two named probing protocols, built from the `probe:` section of config/config.yaml.

`geneb-paper` reproduces the published protocol; `geneb-strict` is the one GENEB recommends. Both are the same
data structure with every setting written out (docs/protocols.md explains each value and its source), so a
protocol is exactly its config and its `config_hash`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import sklearn
from sklearn.linear_model import LogisticRegression

from geneb.metrics import F1_LABELS
from geneb.probe.errors import ProtocolConfigError
from geneb.provenance import stable_hash
from geneb.scores import REGIMES

PROTOCOL_NAMES = ("geneb-paper", "geneb-strict")
DRAWS = ("paper", "nested")
#: solvers that support an L2 penalty in scikit-learn's LogisticRegression
#: the k of each k-shot regime GENEB's analyses know ("10shot", "1shot"; geneb.scores.REGIMES)
SUPPORTED_K = tuple(int(r.removesuffix("shot")) for r in REGIMES if r != "full")
L2_SOLVERS = ("lbfgs", "newton-cg", "newton-cholesky", "sag", "saga")
CI_METHODS = ("percentile", "basic")
BOOTSTRAP_KEYS = ("n_resamples", "seed", "confidence", "method")
SETTING_KEYS = (
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
    fitted on the training split before the probe. solver, penalty ("l2"), tol, max_iter, class_weight (None or
    "balanced"): LogisticRegression settings. C: the fixed inverse regularisation strength (every few-shot fit;
    the full regime too when C_grid is empty). C_grid: ascending grid searched by stratified inner CV on the
    training split in the full regime (empty: no tuning). cv_folds, cv_seed: StratifiedKFold(shuffle=True).
    cv_scoring: "MCC". seeds: draw / probe seeds. few_shot_k: the k of each k-shot regime. report_full_per_seed:
    the full regime, which has no randomness left (lbfgs ignores random_state), is fitted once and reported
    under every seed (paper) or once under cv_seed (strict). max_train: training-split cap (paper: 100,000;
    None = no cap), subsample_seed its seed. bootstrap: CI settings. dedup_test: also score every fit on the
    test split without its within-split duplicate rows (task card `dedup_drop_rows`), as metrics `MCC_dedup`,
    `Acc_dedup`, `F1_dedup` beside the scores on the split as given (case B48). f1_labels: the classes macro-F1
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

    def logistic_regression(self, C: float, seed: int) -> LogisticRegression:
        """A LogisticRegression with every hyperparameter set explicitly (none left to library defaults).

        The L2 penalty is passed as `l1_ratio=0.0` on scikit-learn >= 1.8 (where `penalty=` is deprecated) and
        as `penalty="l2"` before. `random_state=seed` is recorded though lbfgs ignores it (the paper passes it).
        """
        return LogisticRegression(
            C=C,
            tol=self.tol,
            max_iter=self.max_iter,
            solver=self.solver,
            class_weight=self.class_weight,
            random_state=seed,
            **penalty_kwargs(),
        )


def penalty_kwargs() -> dict[str, Any]:
    """The scikit-learn keyword for an L2 penalty in the installed version (see B36 in docs/footguns.md)."""
    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 0.0} if (major, minor) >= (1, 8) else {"penalty": "l2"}


def _need(cond: bool, name: str, msg: str) -> None:
    if not cond:
        raise ProtocolConfigError(f"probe protocol {name!r}: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def from_config(name: str, settings: dict[str, Any]) -> Protocol:
    """Build and validate a Protocol from its config section (`config["probe"][name]`).

    Every key of SETTING_KEYS must be present and no other (no silent defaults). Raises ProtocolConfigError
    naming the protocol and the offending key and value.
    """
    _need(name in PROTOCOL_NAMES, name, f"unknown protocol; known: {PROTOCOL_NAMES}")
    _need(isinstance(settings, dict), name, f"settings must be a mapping, got {type(settings).__name__}")
    missing = [k for k in SETTING_KEYS if k not in settings]
    extra = sorted(set(settings) - set(SETTING_KEYS))
    _need(not missing, name, f"missing settings {missing}")
    _need(not extra, name, f"unknown settings {extra}")
    s = settings
    _need(s["draw"] in DRAWS, name, f"draw must be one of {DRAWS}, got {s['draw']!r}")
    _need(s["solver"] in L2_SOLVERS, name, f"solver must be one of {L2_SOLVERS}, got {s['solver']!r}")
    _need(s["penalty"] == "l2", name, f"penalty must be 'l2', got {s['penalty']!r}")
    _need(
        s["class_weight"] in (None, "balanced"),
        name,
        f"class_weight must be null or 'balanced', got {s['class_weight']!r}",
    )
    _need(isinstance(s["C"], (int, float)) and s["C"] > 0, name, f"C must be > 0, got {s['C']!r}")
    grid = [float(c) for c in s["C_grid"]]
    _need(
        all(c > 0 for c in grid) and grid == sorted(set(grid)),
        name,
        f"C_grid must be strictly ascending positive values, got {s['C_grid']!r}",
    )
    _need(
        _is_int(s["cv_folds"]) and s["cv_folds"] >= 2, name, f"cv_folds must be an integer >= 2, got {s['cv_folds']!r}"
    )
    _need(s["cv_scoring"] == "MCC", name, f"cv_scoring must be 'MCC', got {s['cv_scoring']!r}")
    seeds = list(s["seeds"])
    _need(
        len(seeds) > 0 and all(_is_int(x) and x >= 0 for x in seeds) and len(set(seeds)) == len(seeds),
        name,
        f"seeds must be distinct non-negative integers, got {s['seeds']!r}",
    )
    ks = list(s["few_shot_k"])
    _need(
        all(_is_int(k) and k >= 1 for k in ks) and len(set(ks)) == len(ks),
        name,
        f"few_shot_k must be distinct positive integers, got {s['few_shot_k']!r}",
    )
    # the analyses, figures and the leaderboard's submission format know the paper's regimes only: refuse others
    # here, before any job runs, not at the leaderboard after every probe
    _need(
        set(ks) <= set(SUPPORTED_K),
        name,
        f"few_shot_k {sorted(set(ks) - set(SUPPORTED_K))} not supported: the regimes are {list(REGIMES)}, so k must be "
        f"among {sorted(SUPPORTED_K, reverse=True)}",
    )
    _need(
        s["max_train"] is None or (_is_int(s["max_train"]) and s["max_train"] > 0),
        name,
        f"max_train must be null or a positive integer, got {s['max_train']!r}",
    )
    _need(
        _is_int(s["max_iter"]) and s["max_iter"] > 0,
        name,
        f"max_iter must be a positive integer, got {s['max_iter']!r}",
    )
    _need(isinstance(s["tol"], (int, float)) and s["tol"] > 0, name, f"tol must be > 0, got {s['tol']!r}")
    b = s["bootstrap"]
    _need(
        isinstance(b, dict) and sorted(b) == sorted(BOOTSTRAP_KEYS),
        name,
        f"bootstrap must have exactly {BOOTSTRAP_KEYS}",
    )
    _need(
        _is_int(b["n_resamples"]) and b["n_resamples"] >= 100,
        name,
        f"bootstrap.n_resamples must be >= 100, got {b['n_resamples']!r}",
    )
    _need(0 < b["confidence"] < 1, name, f"bootstrap.confidence must be in (0, 1), got {b['confidence']!r}")
    _need(b["method"] in CI_METHODS, name, f"bootstrap.method must be one of {CI_METHODS}, got {b['method']!r}")
    _need(isinstance(s["dedup_test"], bool), name, f"dedup_test must be true or false, got {s['dedup_test']!r}")
    _need(s["f1_labels"] in F1_LABELS, name, f"f1_labels must be one of {F1_LABELS}, got {s['f1_labels']!r}")
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
        cv_scoring="MCC",
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
