"""The paper's published results: their import into GENEB's score-table format, the reproduction of its
headline numbers, a user's models beside them, and the submission file.

The published GENEB results (the paper's 40 models) converted into GENEB's score-table format.

Input: the reference folder `geneb_paper/` (per_task_results.tsv, benchmark_spec.json, models.tsv,
leaderboard_category_mcc.tsv). Output rows follow `results/tables/scores.parquet` (docs/data-dictionary.md)
with protocol `geneb-paper`, `seed = -1` ("mean over the paper's 5 seeds, as published"), `source =
"published"`, CI and sizes unknown (NaN), and the sha256 of the file they came from in `origin`.

The paper's model ids are the official `model_id`s (e.g. `evo-1-131k-base`); its task ids are the official
task ids, which `config/tasks.tsv` lists as the `paper` task set.

Reproducing the paper: every headline number the GENEB paper states beside GENEB's value for it.

The claims (`config/paper_claims.yaml`: id, statistic, the paper's value, tolerance, how to compare, source,
note) are data; this module holds one function per claim id (`STATISTICS`) that computes GENEB's value from
the published view's analysis outputs (`results/published/tables/`: the analysis summary, the leaderboard and
the models table, all made from the imported published results by the same code a user's run goes through).
A claim passes when |GENEB - paper| <= tolerance (on log10 of both for `compare: log10`, a p-value stated as an
order of magnitude). Output columns: claim (the id), statistic, paper, geneb, tolerance, passed, note
(docs/analyses.md).

Place a user's models, run under the `geneb-paper` protocol, beside the paper's 40 published models.

Only tasks whose data is the paper's can be compared: a paper task itself (catalogue `task_set = paper`), or
a mirrored task whose split is the paper's (`same_split_as_geneb = yes`; its `geneb_task_id` names the paper
task). Every other task the user ran is listed with the reason it could not be compared (a subset of the
paper's split, a different split, no paper counterpart), and so is every paper task the user did not run.

The comparison leaderboard is computed over the *common* tasks only, for every model (published and
user), so the numbers are comparable; `n_tasks_paper` says how many tasks the paper's category has. Its
uncertainty (`compare_intervals`) resamples the common tasks within each category (no per-row predictions exist
for the published models, so test rows are not resampled): a percentile CI of every complete model's category and
macro score, its rank interval, and the best model with those it cannot be told apart from (the analyses'
`ranking.ranked_replicates`, `ranking.rank_intervals`, `ranking.recommend`: rank, interval and best over the same
models, those the comparison board ranks in the column), so `geneb leaderboard` and
`geneb recommend` read the comparison table like their own.

A model's results as a submission file for the official GENEB leaderboard (schema 1.0).

Format (the reference folder's README, "Submission file", and `submissions/*.json`): `schema_version`
"1.0", `model_id`, `harness_version`, `meta` {display, params, url, zero_shot, training_data, provenance,
submitted_by}, `results` -> regime -> paper task id -> {MCC, Acc, F1}, each the mean over seeds rounded to 4
decimals. Only `geneb-paper` results on tasks whose data and split are the paper's are written (mirrored
tasks under their paper id); `validate_submission` checks a file against the benchmark spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

import geneb.analysis.ranking as ranking
from geneb import __version__
from geneb.analysis.inputs import cell_scores, model_frame, task_categories, task_matrix
from geneb.analysis.inputs import registry as read_registry
from geneb.analysis.ranking import AGGREGATES, rank_intervals
from geneb.core import yamlio
from geneb.core.paths import load_schema, schema_errors
from geneb.core.provenance import file_sha256
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import (
    PUBLISHED_PROTOCOL,
    PUBLISHED_SEED,
    REGIMES,
    SCHEMA_VERSION,
    AnalysisInputError,
    check_scores,
    with_code_revision,
)
from geneb.tasks.prepare import read_card

PROTOCOL = PUBLISHED_PROTOCOL


def _need(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.exists():
        raise AnalysisInputError(f"published results: {path} not found (expected the geneb_paper reference folder)")
    return path


def load_spec(folder: str | Path) -> dict[str, Any]:
    """The official benchmark definition (`benchmark_spec.json`)."""
    return json.loads(_need(Path(folder), "benchmark_spec.json").read_text())


def import_published(folder: str | Path) -> pd.DataFrame:
    """Read `per_task_results.tsv` into a validated score table (see module docstring).

    Returns one row per (model, regime, task, metric), metrics MCC, Acc, F1 as published (5-seed means).
    Raises AnalysisInputError for a task that is not in the benchmark spec or a missing file.
    """
    folder = Path(folder)
    path = _need(folder, "per_task_results.tsv")
    spec = load_spec(folder)
    category = {t["id"]: t["category"] for t in spec["tasks"]}
    raw = pd.read_csv(path, sep="\t")
    unknown = sorted(set(raw["task_id"]) - set(category))
    if unknown:
        raise AnalysisInputError(f"{path}: tasks not in benchmark_spec.json: {unknown[:5]}")
    out = pd.DataFrame(
        {
            "schema_version": SCHEMA_VERSION,
            "protocol": PROTOCOL,
            "model": raw["model_id"].astype(str),
            "task": raw["task_id"].astype(str),
            "category": raw["task_id"].map(category),
            "regime": raw["regime"].astype(str),
            "seed": PUBLISHED_SEED,
            "metric": raw["metric"].astype(str),
            "value": raw["value"].astype(float),
            "ci_low": np.nan,
            "ci_high": np.nan,
            "n_train": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "n_test": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "source": "published",
            "origin": f"geneb_paper/per_task_results.tsv sha256:{file_sha256(str(path))}",
            "harness_version": spec.get("harness_version", ""),
            "geneb_version": __version__,
        }
    )
    return with_code_revision(check_scores(out, what=str(path)).reset_index(drop=True))


def _registry_by_hub(registry: str | Path | None) -> dict[str, dict[str, Any]]:
    if registry is None or not Path(registry).exists():
        return {}
    entries = yamlio.safe_load(Path(registry).read_text()) or []
    return {str(e["hf_id"]).lower(): e for e in entries if isinstance(e, dict) and e.get("hf_id")}


def published_model_meta(
    folder: str | Path, models_yaml: str | Path | None = None, registry: str | Path | None = None
) -> pd.DataFrame:
    """Model metadata (`metadata.model_frame` columns) of the paper's 40 models, indexed by official model_id.

    From `models.tsv`: display (leaderboard name), params (`params_current`: the count the paper's scale
    analysis used), params_first_release (`params_early_meta`, where the first release differs), architecture,
    architecture_family (`family`), tokenizer_type, pretraining_data. `pretraining_domain` comes from the
    GENEB registry entry whose `paper.model_id` is the official id, else from the shared reference registry
    (`registry.yaml`, by hub id), else "unknown".
    """
    folder = Path(folder)
    tsv = pd.read_csv(_need(folder, "models.tsv"), sep="\t")
    own: dict[str, ModelSpec] = {}
    if models_yaml is not None and Path(models_yaml).exists():
        for spec in read_registry(models_yaml).models.values():
            if spec.paper_model_id:
                own[spec.paper_model_id] = spec
    hub = _registry_by_hub(registry)
    records = {}
    for _, r in tsv.iterrows():
        mid = str(r["geneb_model_id"])
        domain = (
            (own[mid].pretraining_domain if mid in own else None)
            or (hub.get(str(r["hub_id_or_source"]).lower()) or {}).get("domain")
            or "unknown"
        )
        early = r["params_early_meta"]
        records[mid] = {
            "display": r["leaderboard_display"],
            "params": r["params_current"],
            "params_paper": early if pd.notna(early) else np.nan,
            "architecture": r["architecture"],
            "architecture_family": r["family"],
            "tokenizer_type": r["tokenizer"],
            "pretraining_data": r["pretraining_data_unverified"],
            "pretraining_domain": domain,
            "trained_on_tasks": (),
            "paper": {"model_id": mid},
        }
    return model_frame(records)


#: the columns of reproduce_paper.parquet
_REPRODUCE_COLUMNS = ("claim", "statistic", "paper", "geneb", "tolerance", "passed", "note")
#: pretraining domains of "multi-species and eukaryotic-gene pretraining" (the paper's top-placement claim)
_BROAD_DOMAINS = ("multispecies", "eukaryote")


@dataclass(frozen=True)
class Outputs:
    """What the statistics read: the published view's analysis summary (analysis_summary.json, parsed), its
    leaderboard (leaderboard.parquet) and models table (models.parquet), and the protocol of the results."""

    summary: dict[str, Any]
    leaderboard: pd.DataFrame
    models: pd.DataFrame
    protocol: str

    def regime(self, regime: str) -> dict[str, Any]:
        """The summary of one regime; AnalysisInputError when the analyses did not run it."""
        try:
            return self.summary["protocols"][self.protocol]["regimes"][regime]
        except KeyError:
            raise AnalysisInputError(f"analysis summary has no {self.protocol!r} {regime!r} regime") from None


def _spearman(subset: str, key: str) -> Callable[[Outputs], float]:
    def get(o: Outputs) -> float:
        s = o.regime("full").get("spearman") or {}
        if subset not in s:
            raise AnalysisInputError(f"analysis summary has no Spearman rho for subset {subset!r}")
        return s[subset][key]

    return get


def _mean_macro(regime: str) -> Callable[[Outputs], float]:
    return lambda o: o.regime(regime)["mean_macro"]


def _winner_changes(a: str, b: str) -> Callable[[Outputs], float]:
    def get(o: Outputs) -> float:
        pairs = o.summary["protocols"][o.protocol].get("top_model_changes", [])
        for p in pairs:
            if (p["a"], p["b"]) == (a, b):
                return p["changed"]
        raise AnalysisInputError(f"analysis summary has no winner changes between {a} and {b}")

    return get


def _categories(o: Outputs) -> float:
    cats = set(o.leaderboard.loc[o.leaderboard["protocol"] == o.protocol, "category"]) - set(AGGREGATES)
    return len(cats)


def _top_placements(o: Outputs, domains: tuple[str, ...] = _BROAD_DOMAINS) -> tuple[int, int]:
    """(category winners whose model's pretraining_domain is in `domains`, all category winners), over the 13
    categories x every regime of the protocol; winners among complete models, as the leaderboard ranks them."""
    b = o.leaderboard[(o.leaderboard["protocol"] == o.protocol) & o.leaderboard["complete"]]
    b = b[~b["category"].isin(AGGREGATES)]
    winners = b.loc[b.groupby(["regime", "category"])["value"].idxmax(), "model"]
    domain = o.models.set_index("model")["pretraining_domain"]
    return int(winners.map(domain).isin(domains).sum()), len(winners)


#: claim id -> GENEB's value from the published view's outputs
STATISTICS: dict[str, Callable[[Outputs], float]] = {
    "n_models": lambda o: o.regime("full")["n_models"],
    "n_tasks": lambda o: o.regime("full")["n_tasks"],
    "n_categories": _categories,
    "spearman_rho_all": _spearman("all", "rho"),
    "spearman_p_all": _spearman("all", "p_value"),
    "spearman_rho_excluding": _spearman("excluding", "rho"),
    "mean_macro_full": _mean_macro("full"),
    "mean_macro_10shot": _mean_macro("10shot"),
    "mean_macro_1shot": _mean_macro("1shot"),
    "winner_changes_full_10shot": _winner_changes("full", "10shot"),
    "n_in_domain": lambda o: o.regime("full")["n_in_domain"],
    "n_reversals": lambda o: o.regime("full")["n_reversals"],
    "top_placements_multispecies_eukaryotic": lambda o: _top_placements(o)[0],
}


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    """The claims of `path` (config/paper_claims.yaml), validated against paper_claims.schema.yaml, `compare`
    defaulted to "absolute". Raises AnalysisInputError naming the file and the first problem, including a claim
    id without a statistic in STATISTICS and an id listed twice."""
    try:
        data = yamlio.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise AnalysisInputError(f"{path}: {err}") from err
    errors = schema_errors(data, load_schema("paper_claims"))
    if errors:
        e = errors[0]
        raise AnalysisInputError(f"{path}: {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
    ids = [c["id"] for c in data["claims"]]
    unknown = [i for i in ids if i not in STATISTICS]
    if unknown:
        raise AnalysisInputError(f"{path}: no GENEB statistic for claim ids {unknown}; known: {sorted(STATISTICS)}")
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise AnalysisInputError(f"{path}: claim ids listed twice: {twice}")
    return [{"compare": "absolute", "note": "", **c} for c in data["claims"]]


def reproduce(claims: list[dict[str, Any]], outputs: Outputs) -> pd.DataFrame:
    """One row per claim (REPRODUCE_COLUMNS): the paper's value, GENEB's, the tolerance, whether it passes, the note.

    passed: |geneb - paper| <= tolerance, or for compare log10 |log10(geneb) - log10(paper)| <= tolerance
    (False for a non-positive value). Raises AnalysisInputError when an output lacks what a statistic reads."""
    rows = []
    for c in claims:
        value = float(STATISTICS[c["id"]](outputs))
        if c["compare"] == "log10":
            ok = value > 0 and c["paper"] > 0 and abs(np.log10(value) - np.log10(c["paper"])) <= c["tolerance"]
        else:
            ok = abs(value - c["paper"]) <= c["tolerance"] + 1e-12
        rows.append(
            {
                "claim": c["id"],
                "statistic": c["statistic"],
                "paper": float(c["paper"]),
                "geneb": value,
                "tolerance": float(c["tolerance"]),
                "passed": bool(ok),
                "note": c["note"],
            }
        )
    return pd.DataFrame(rows, columns=list(_REPRODUCE_COLUMNS))


def capped_tasks(cards: Iterable[str | Path]) -> dict[str, str]:
    """{task: reason} for the prepared tasks whose card records a cap (config `caps`: a seeded subsample of a
    split), read from their task cards. A capped task is not the paper's split, so its scores must not sit on
    the published leaderboard or go into a submission."""
    out = {}
    for path in cards:
        card = read_card(path)
        cut = [f"{split} {c.n_kept} of {c.n_source} rows" for split, c in card.capped_splits().items()]
        if cut:
            out[card.task] = f"capped by the run's config ({', '.join(cut)}): a subsample, not the paper's split"
    return out


def _paper_task_map(task_meta: pd.DataFrame) -> tuple[dict[str, str], dict[str, str]]:
    """({task: paper task id} for comparable tasks, {task: reason} for the others), over the catalogue."""
    ok: dict[str, str] = {}
    why: dict[str, str] = {}
    for key, row in task_meta.iterrows():
        task = str(key)
        if row.get("task_set") == "paper":
            ok[task] = task
        elif row.get("geneb_task_id") and row.get("same_split_as_geneb") == "yes":
            ok[task] = str(row["geneb_task_id"])
        elif row.get("geneb_task_id"):
            split = row.get("same_split_as_geneb") or "unknown"
            kind = "a subset of" if split == "subset" else "not the same split as"
            why[task] = f"same data as paper task {row['geneb_task_id']} but {kind} the paper's split"
        else:
            why[task] = "no paper task has this data"
    return ok, why


def compare_with_published(
    user_scores: pd.DataFrame,
    published_scores: pd.DataFrame,
    task_meta: pd.DataFrame,
    exclude_cells: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset(),
    capped: dict[str, str] | None = None,
    failed: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leaderboard of user + published models over the common paper tasks, and the tasks left out.

    user_scores: validated GENEB score table (its `geneb-paper` rows are used); published_scores: the
    imported published table; task_meta: the catalogue; exclude_cells: (model, task) cells left out and
    listed, e.g. contaminated ones (`contamination.flag_contamination`); capped: {task: reason} of tasks the
    run capped (`capped_tasks`), left out and listed; failed: {task: error} of the user's tasks that failed in a
    partial run (geneb.run.partial), listed with their error in place of "not run by the user". A model that ran both a paper task and a mirror task with
    the same data keeps the paper task's own result (the mirror one is listed). Returns (board, left_out).
    board: leaderboard columns plus n_tasks_paper and `origin` ("user" / "published"); user model ids that
    collide with a published id get the prefix "user:". left_out: task, paper_task, model (user model or "*"),
    reason; every (model, regime) a user model lacks on a common task is listed, a whole missing regime too.
    board.attrs["cells"] holds the per-cell table the board was computed from (`compare_intervals`,
    `task_table`). Raises AnalysisInputError when the user ran no comparable task under geneb-paper.
    """
    user = user_scores[user_scores["protocol"] == PROTOCOL]
    if user.empty:
        raise AnalysisInputError(f"no {PROTOCOL} rows in the user's score table")
    ok, why = _paper_task_map(task_meta)
    capped = capped or {}
    left = []
    for task in sorted(set(user["task"])):
        if task not in ok:
            left.append(
                {"task": task, "paper_task": "", "model": "*", "reason": why.get(task, "task not in the catalogue")}
            )
        elif task in capped:
            left.append({"task": task, "paper_task": ok[task], "model": "*", "reason": capped[task]})
    ok = {t: p for t, p in ok.items() if t not in capped}
    for model, task in sorted(exclude_cells):
        if ((user["model"] == model) & (user["task"] == task)).any():
            left.append(
                {
                    "task": task,
                    "paper_task": ok.get(task, ""),
                    "model": model,
                    "reason": "left out: the model was trained on this task",
                }
            )
    drop = pd.Series(
        [(m, t) in exclude_cells for m, t in zip(user["model"], user["task"])], index=user.index, dtype=bool
    )
    user = user[~drop & user["task"].isin(ok)].copy()
    if user.empty:
        raise AnalysisInputError(
            "none of the user's geneb-paper tasks has the paper's data and split; nothing to compare"
        )
    # the same paper task reached twice by one model (the paper task and a same-split mirror): keep the paper's own
    user["paper_task"] = user["task"].map(ok)
    dup = user.groupby(["model", "paper_task"])["task"].transform("nunique") > 1
    shadowed = user[dup & (user["task"] != user["paper_task"])]
    for (model, task), g in shadowed.groupby(["model", "task"]):
        left.append(
            {
                "task": task,
                "paper_task": g["paper_task"].iloc[0],
                "model": model,
                "reason": "the model also ran the paper task itself; that result is used",
            }
        )
    user = user.drop(index=shadowed.index)
    user["task"] = user.pop("paper_task")
    published_ids = set(published_scores["model"])
    user["model"] = [f"user:{m}" if m in published_ids else m for m in user["model"]]
    user["source"] = "geneb"
    common = sorted(set(user["task"]))
    failed_paper = {ok[t]: f"failed in this run ({err})" for t, err in (failed or {}).items() if t in ok}
    for task in sorted(set(published_scores["task"]) - set(common)):
        reason = failed_paper.get(task, "paper task not run by the user")
        left.append({"task": task, "paper_task": task, "model": "*", "reason": reason})
    # a user model that ran only some of the common tasks: list what it misses
    excluded = {(m, ok.get(t, t)) for m, t in exclude_cells}
    regimes = sorted(set(published_scores["regime"]) | set(user["regime"]))
    for model, g in user.groupby("model"):
        for regime in regimes:
            gr = g[g["regime"] == regime]
            for task in sorted(set(common) - set(gr["task"]) - {t for m, t in excluded if m == model}):
                left.append(
                    {"task": task, "paper_task": task, "model": model, "reason": f"no {regime} result for this model"}
                )
    pub = published_scores[published_scores["task"].isin(common)]
    cells = cell_scores(pd.concat([pub, user], ignore_index=True), protocol=PROTOCOL)
    board = ranking.leaderboard(cells)
    n_paper = published_scores.drop_duplicates("task").groupby("category")["task"].size()
    board["n_tasks_paper"] = board["category"].map(n_paper)
    board.loc[board["category"].isin(ranking.AGGREGATES), "n_tasks_paper"] = published_scores["task"].nunique()
    board["n_tasks_paper"] = board["n_tasks_paper"].astype("Int64")
    board["origin"] = ["user" if m in set(user["model"]) else "published" for m in board["model"]]
    board.attrs["cells"] = cells
    return board, pd.DataFrame(left, columns=["task", "paper_task", "model", "reason"])


#: the columns `compare_intervals` adds to the comparison board
_INTERVAL_COLUMNS = (
    "ci_low",
    "ci_high",
    "rank_low",
    "rank_high",
    "p_top1",
    "rank_interval_widened",
    "interval_reason",
    "role",
    "tie_rule",
    "confidence",
    "seed",
)


def compare_intervals(
    board: pd.DataFrame,
    cells: pd.DataFrame,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    tie_rule: str = "overlap",
) -> pd.DataFrame:
    """`board` with the comparison's uncertainty, per (regime, category incl. macro, model), tasks resampled.

    cells: the per-cell table of the comparison (board.attrs["cells"]). For each regime, each column (a category,
    macro) with at least 2 ranked models goes through `ranking.ranked_replicates` over exactly the models the board
    ranks there (`ranking.ranked_sets`: a category over the models with every task of it, macro over those with every
    common task; an unranked model gets no interval), tasks drawn with replacement within each category, `n_resamples`
    draws from `seed` (the same draws for a category either way; no test-row level: the published models have no
    per-row predictions). Sets rank and of on those rows from the same computation as the interval
    (`ranking.rank_intervals`: rank_low <= rank <= rank_high) and adds ci_low, ci_high (percentile CI of the score at
    `confidence`; NA for a single-task category, where there is nothing to resample, and for a macro over one),
    rank_low, rank_high, p_top1, rank_interval_widened, interval_reason (why an interval is NA, "" otherwise), role
    ("best", "tied" by `tie_rule`, else NA; `ranking.recommend`: the best is a model of rank 1), tie_rule,
    confidence and seed. Micro rows and columns with one ranked model get no interval (`of` is still set). Returns
    a new frame.
    """
    rows = []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True):
        reps = ranking.ranked_replicates(
            task_matrix(c, str(regime)),
            task_categories(c),
            None,
            ranking.ranked_sets(board, str(protocol), str(regime)),
            n_resamples=n_resamples,
            seed=seed,
        )
        for column, rep in reps.items():
            ri = rank_intervals(rep, confidence)
            ri = ri[ri["category"] == column].drop(columns=["value", "rows_resampled", "n_resamples"])
            rec = ranking.recommend(rep, confidence=confidence, tie_rule=tie_rule)
            ri = ri.merge(
                rec.loc[rec["category"] == column, ["category", "model", "role"]], on=["category", "model"], how="left"
            )
            ri["protocol"], ri["regime"] = protocol, regime
            rows.append(ri)
    keys = ["protocol", "regime", "category", "model"]
    fields = ["rank", "of", "rank_low", "rank_high", "p_top1", "rank_interval_widened", "interval_reason", "seed"]
    extra = (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(columns=[*keys, *fields, "ci_low", "ci_high", "role"])
    ).rename(columns={"rank": "_rank", "of": "_of"})
    out = board.drop(columns=[c for c in (*_INTERVAL_COLUMNS, "of") if c in board.columns]).merge(
        extra, on=keys, how="left"
    )
    ranked = out["rank"].notna()
    out["of"] = ranked.groupby([out[k] for k in keys[:3]], observed=True).transform("sum").astype("Int64")
    has = out["_rank"].notna()
    out.loc[has, "rank"], out.loc[has, "of"] = out.loc[has, "_rank"], out.loc[has, "_of"]
    out = out.drop(columns=["_rank", "_of"])
    out[["rank", "of", "rank_low", "rank_high"]] = out[["rank", "of", "rank_low", "rank_high"]].astype("Int64")
    out["rank_interval_widened"] = out["rank_interval_widened"].astype("boolean")
    out["tie_rule"], out["confidence"], out["seed"] = tie_rule, float(confidence), int(seed)
    out.attrs = dict(board.attrs)
    return out


def task_table(cells: pd.DataFrame, origin: dict[str, str]) -> pd.DataFrame:
    """The per-task comparison: one row per (protocol, regime, task, model) with category, value (seed-mean
    score), rank within the task (1 = best; `leaderboard.task_leaderboard`), n_models (models with the task),
    and origin ({model: "user" | "published"})."""
    out = ranking.task_leaderboard(cells)
    out["n_models"] = out.groupby(["protocol", "regime", "task"], observed=True)["model"].transform("size")
    out["origin"] = out["model"].map(origin).fillna("published")
    keep = ["protocol", "regime", "category", "task", "model", "origin", "value", "rank", "n_models", "source"]
    return out[[c for c in keep if c in out.columns]]


_SUBMISSION_SCHEMA_VERSION = "1.0"
_METRICS = ("MCC", "Acc", "F1")
_META_KEYS = ("display", "params", "url", "zero_shot", "training_data", "provenance", "submitted_by")


def build_submission(
    scores: pd.DataFrame,
    model: str,
    spec: dict[str, Any],
    task_meta: pd.DataFrame,
    *,
    meta: dict[str, Any],
    exclude: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """The schema-1.0 submission of `model` from a validated score table.

    scores: GENEB score table (its `geneb-paper` rows of `model` are used); spec: `benchmark_spec.json`;
    task_meta: the catalogue (maps mirrored tasks onto paper ids); meta: the `meta` block (keys META_KEYS;
    missing keys become "" / False / 0); exclude: task ids (GENEB or paper ids) left out with every task of
    the same data (the catalogue's `geneb_task_id` group), e.g. the tasks the model was trained on
    (contamination). Metric values are written unrounded. Raises AnalysisInputError when the model has no comparable task, or
    when two of its tasks map onto the same paper task.
    """
    rows = scores[(scores["protocol"] == PROTOCOL) & (scores["model"] == model) & scores["metric"].isin(_METRICS)]
    ok, _ = _paper_task_map(task_meta)
    known = {t["id"] for t in spec["tasks"]}
    rows = rows[rows["task"].isin(ok)].copy()
    rows["paper_task"] = rows["task"].map(ok)
    # an excluded task takes every task with the same data with it (mirror <-> paper id), as in contamination
    group = {t: g for t, g in task_meta["geneb_task_id"].items() if g} if "geneb_task_id" in task_meta.columns else {}
    dropped = {group.get(t, t) for t in exclude}
    rows = rows[
        rows["paper_task"].isin(known)
        & ~rows["task"].map(lambda t: group.get(t, t)).isin(dropped)
        & ~rows["paper_task"].isin(dropped)
    ]
    if rows.empty:
        raise AnalysisInputError(f"model {model!r} has no {PROTOCOL} result on a task with the paper's data and split")
    clash = rows.groupby("paper_task")["task"].nunique()
    if (clash > 1).any():
        raise AnalysisInputError(f"model {model!r}: several tasks map onto paper task {clash.index[clash > 1][0]!r}")
    means = rows.groupby(["regime", "paper_task", "metric"])["value"].mean()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for regime in REGIMES:
        if regime not in means.index.get_level_values(0):
            continue
        per_task = {}
        for task in sorted(means.loc[regime].index.get_level_values(0).unique()):
            m = means.loc[(regime, task)]
            per_task[task] = {
                k: float(m[k]) for k in _METRICS if k in m.index and np.isfinite(m[k])
            }  # unrounded, as most official files
        results[regime] = per_task
    full_meta: dict[str, Any] = {
        "display": model,
        "params": 0,
        "url": "",
        "zero_shot": False,
        "training_data": "",
        "provenance": f"geneb {__version__}",
        "submitted_by": "",
    }
    full_meta.update({k: v for k, v in meta.items() if k in _META_KEYS and v is not None})
    full_meta["params"] = int(full_meta["params"]) if full_meta["params"] == full_meta["params"] else 0
    return {
        "schema_version": _SUBMISSION_SCHEMA_VERSION,
        "model_id": model,
        "harness_version": f"geneb-{__version__}",
        "meta": full_meta,
        "results": results,
    }


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def validate_submission(sub: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Problems of a submission against schema 1.0 and the benchmark spec; [] when it is valid.

    Checks the top-level keys (no others), schema version, `model_id` and `harness_version` as text, meta keys
    and types (`zero_shot` a boolean, `params` a non-negative integer, the text fields text), regimes, that
    every task id is in the spec and has an MCC, and that each metric is a number, not a boolean (MCC in
    [-1, 1], Acc and F1 in [0, 1]). Never raises on a malformed document: every problem is listed.
    """
    if not isinstance(sub, dict):
        return [f"a submission is a JSON object, not {type(sub).__name__}"]
    problems = []
    top = ("schema_version", "model_id", "harness_version", "meta", "results")
    for key in top:
        if key not in sub:
            problems.append(f"missing key {key!r}")
    problems += [f"unknown key {k!r}" for k in sub if k not in top]
    if problems:
        return problems
    if sub["schema_version"] != _SUBMISSION_SCHEMA_VERSION:
        problems.append(f"schema_version is {sub['schema_version']!r}, expected {_SUBMISSION_SCHEMA_VERSION!r}")
    for key in ("model_id", "harness_version"):
        if not isinstance(sub[key], str) or not sub[key]:
            problems.append(f"{key} must be non-empty text, got {sub[key]!r}")
    meta = sub["meta"]
    if not isinstance(meta, dict):
        return problems + ["meta must be an object"]
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        problems.append(f"meta lacks {missing}")
    if not isinstance(meta.get("zero_shot"), bool):
        problems.append("meta.zero_shot must be true or false")
    params = meta.get("params")
    if not isinstance(params, int) or isinstance(params, bool) or params < 0:
        problems.append(f"meta.params must be a non-negative integer, got {params!r}")
    for key in _META_KEYS:
        if key not in ("zero_shot", "params") and key in meta and not isinstance(meta[key], str):
            problems.append(f"meta.{key} must be text, got {meta[key]!r}")
    results = sub["results"]
    if not isinstance(results, dict) or not results:
        return problems + [f"results must be a non-empty object of regimes, got {results!r:.60}"]
    known = {t["id"] for t in spec["tasks"]}
    for regime, tasks in results.items():
        if regime not in spec.get("regimes", REGIMES):
            problems.append(f"unknown regime {regime!r}")
        if not isinstance(tasks, dict) or not tasks:
            problems.append(f"{regime}: no tasks")
            continue
        for task, metrics in tasks.items():
            if task not in known:
                problems.append(f"{regime}: task {task!r} is not in the benchmark spec")
            if not isinstance(metrics, dict) or "MCC" not in metrics:
                problems.append(f"{regime}/{task}: no MCC")
                continue
            for k, v in metrics.items():
                lo = -1.0 if k == "MCC" else 0.0
                if k not in _METRICS:
                    problems.append(f"{regime}/{task}: unknown metric {k!r}")
                elif not _is_number(v) or not lo <= v <= 1:
                    problems.append(f"{regime}/{task}: {k} = {v!r} is not a number in [{lo}, 1]")
    return problems


def write_submission(sub: dict[str, Any], path: str | Path) -> None:
    """Write `sub` as indented JSON (atomically)."""
    from geneb.core.integrity import write_text_atomic

    write_text_atomic(path, json.dumps(sub, indent=2, sort_keys=False) + "\n")
