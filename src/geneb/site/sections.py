"""The bodies of the site's pages, from the labelled rows of every run (`geneb.site.collect`): the leaderboard, the
task list with the audit, the per-task scores, the model list, and one page per model and per task."""

from __future__ import annotations

import pandas as pd

from geneb.analysis.ranking import TASK_FLAGS_ATTR
from geneb.report.runcard import extraction_facts
from geneb.site.collect import (
    RunTables,
    card_facts,
    extraction_records,
    labelled,
    left_out,
    probe_provenance,
    task_card,
)
from geneb.site.pages import card, embed, esc, heading, note, slug, table_spec

#: the leaderboard's filter columns, those present (the tier and view columns only in tables that have them)
_BOARD_FILTERS = ("run", "protocol", "regime", "category", "view", "tier", "subset")
#: the leaderboard columns shown, in order, those present
_BOARD_COLUMNS = (
    "run",
    "protocol",
    "regime",
    "view",
    "category",
    "rank",
    "tier",
    "display",
    "value",
    "rank interval",
    "p_top1",
    "tasks",
    "borda_rank",
    "shortcut_margin",
    "flags",
    "excluded_tasks",
    "incomplete_reason",
    "tier_note",
)
#: the task audit columns of the task list, those present
_AUDIT_COLUMNS = (
    "n_train",
    "n_test",
    "shortcut_flag",
    "shortcut_best_feature",
    "shortcut_best_auroc",
    "shortcut_best_mcc_full",
    "leak_flag",
    "leaked_fraction",
    "overlap_homolog",
    "largest_clean_difference",
)
_LABELS = {
    "display": "model",
    "value": "MCC",
    "incomplete_reason": "not ranked because",
    "tier_note": "tier against rank",
    "excluded_tasks": "excluded tasks",
    "shortcut_margin": "shortcut margin",
    "borda_rank": "Borda rank",
    "p_top1": "P(top 1)",
    "shortcut_best_auroc": "best feature AUROC",
    "shortcut_best_feature": "best feature",
    "shortcut_best_mcc_full": "best shortcut MCC (full)",
    "leaked_fraction": "leaked fraction",
    "overlap_homolog": "test rows with a homolog",
    "largest_clean_difference": "largest full − clean MCC",
    "n_models": "models",
    "best_value": "best MCC (full)",
}


#: comma-joined list columns, shown with a space after each comma (so a narrow cell wraps between items)
_LIST_COLUMNS = ("flags", "flagged_tasks", "excluded_tasks")


def _model_links(df: pd.DataFrame, up: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """`df` with page columns for its models and tasks, and the link templates of the display/model/task
    columns (`up`: the path from the page to the site's root); the LIST_COLUMNS spaced after their commas."""
    hrefs = {}
    df = df.copy()
    for c in _LIST_COLUMNS:
        if c in df.columns:
            df[c] = [v.replace(",", ", ") if isinstance(v, str) else v for v in df[c]]
    if "model" in df.columns:
        df["model_page"] = [f"{slug(m)}.html" for m in df["model"]]
        hrefs.update(dict.fromkeys(("display", "model"), up + "models/{model_page}"))
    if "task" in df.columns:
        df["task_page"] = [f"{slug(t)}.html" for t in df["task"]]
        hrefs["task"] = up + "tasks/{task_page}"
    return df, hrefs


def _default_protocol(df: pd.DataFrame) -> str | None:
    if "protocol" not in df.columns or df.empty:
        return None
    have = sorted(df["protocol"].dropna().astype(str).unique())
    return "geneb-paper" if "geneb-paper" in have else (have[0] if have else None)


def _show(cols: tuple[str, ...] | list[str], df: pd.DataFrame, runs: list[RunTables]) -> list[str]:
    """`cols` present in `df`, without `run` when there is one run, and without a column that is empty in every row."""
    out = []
    for c in cols:
        if c not in df.columns or (c == "run" and len(runs) < 2):
            continue
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            if s.isna().all():
                continue
        elif (s.fillna("").astype(str) == "").all():
            continue
        out.append(c)
    return out


def board_table(board: pd.DataFrame, runs: list[RunTables], table_id: str, up: str = "") -> str:
    """The leaderboard as a page table: filters BOARD_FILTERS (macro, full and the default protocol selected),
    sorted by rank, a CI bar where the table has ci_low/ci_high, the bootstrap rank interval where the run has
    rank_intervals, and rows feeding a flagged task marked."""
    b = board.copy()
    if {"rank_low", "rank_high"} <= set(b.columns):
        b["rank interval"] = [
            "" if pd.isna(lo) or pd.isna(hi) else f"{int(lo)}–{int(hi)}"
            for lo, hi in zip(b["rank_low"], b["rank_high"])
        ]
    if {"n_tasks", "n_tasks_expected"} <= set(b.columns):
        b["tasks"] = [f"{a} of {e}" for a, e in zip(b["n_tasks"], b["n_tasks_expected"])]
    b, hrefs = _model_links(b, up)
    spec = table_spec(
        b,
        columns=_show(_BOARD_COLUMNS, b, runs),
        labels=_LABELS,
        filters=_BOARD_FILTERS,
        defaults={"category": "macro", "regime": "full", "protocol": _default_protocol(b)},
        sort=("rank", "asc"),
        hrefs=hrefs,
        ci={"value": ("ci_low", "ci_high")},
        flagged="flags",
    )
    return embed(table_id, spec)


def cells_table(cells: pd.DataFrame, runs: list[RunTables], table_id: str, up: str, *, by_task: bool) -> str:
    """Per-task scores as a page table, with each cell's CI bar (leaderboard_tasks' ci_low/ci_high) and the
    shortcut margin: per model of a task (`by_task`) or per task of a model."""
    c, hrefs = _model_links(cells, up)
    first = ["display"] if by_task else ["task", "category"]
    cols = [
        "run",
        "protocol",
        "regime",
        "view",
        *first,
        "rank",
        "value",
        "n_seeds",
        "ci_source",
        "shortcut_margin",
        "flags",
        "contamination_reason",
    ]
    spec = table_spec(
        c,
        columns=_show(cols, c, runs),
        labels=_LABELS,
        filters=("run", "protocol", "regime", "view", *(() if by_task else ("category",))),
        defaults={"regime": "full", "protocol": _default_protocol(c)},
        sort=("value", "desc") if by_task else ("task", "asc"),
        hrefs=hrefs,
        ci={"value": ("ci_low", "ci_high")},
        flagged="flags",
    )
    return embed(table_id, spec)


def flag_notes(runs: list[RunTables]) -> list[str]:
    """One warning per run whose leaderboard names tasks that fail the task audit, with each task's reasons."""
    out = []
    for run in runs:
        flags = run.attrs.get(TASK_FLAGS_ATTR) or {}
        if flags:
            items = "".join(
                f"<li><a href='tasks/{esc(slug(t))}.html'>{esc(t)}</a>: "
                + "; ".join(f"{esc(k)}: {esc(why)}" for k, why in sorted(kinds.items()))
                + "</li>"
                for t, kinds in sorted(flags.items())
            )
            out.append(
                f"<div class='warn'>⚑ run {esc(run.label)}: {len(flags)} task(s) fail the task audit; the rows they "
                f"feed are marked (flags column)<ul>{items}</ul></div>"
            )
    return out


def task_list(cells: pd.DataFrame, audit: pd.DataFrame, runs: list[RunTables]) -> str:
    """The task list: per (run, task) its category, how many models scored it, the best full-regime MCC, and the
    task audit's columns (AUDIT_COLUMNS) where the run has the audit table; rows whose audit fails marked."""
    keys = ["run", "task"]
    full = cells[cells["regime"] == "full"] if "regime" in cells.columns else cells
    overview = (
        cells.groupby(keys, sort=True).agg(category=("category", "first"), n_models=("model", "nunique")).reset_index()
    )
    best = full.groupby(keys)["value"].max().rename("best_value").reset_index()
    overview = overview.merge(best, on=keys, how="left")
    if len(audit):
        a = audit[[*keys, *(c for c in ("audit_fail", *_AUDIT_COLUMNS) if c in audit.columns)]]
        overview = overview.merge(a, on=keys, how="outer")
        if "category" in audit.columns:
            cat = audit.set_index(keys)["category"]
            overview["category"] = [
                c if isinstance(c, str) else cat.get((r, t)) for r, t, c in overview[keys + ["category"]].values
            ]
    if "audit_fail" in overview.columns:
        overview["audit"] = ["fail" if bool(v) is True and v == v else "" for v in overview["audit_fail"]]
    overview, hrefs = _model_links(overview, "")
    cols = ["run", "task", "category", "n_models", "best_value", "audit", *_AUDIT_COLUMNS]
    spec = table_spec(
        overview,
        columns=_show(cols, overview, runs),
        labels=_LABELS,
        filters=("run", "category", "audit", "shortcut_flag", "leak_flag"),
        sort=("task", "asc"),
        hrefs=hrefs,
        flagged="audit",
    )
    return embed("tasks", spec)


def model_list(models: pd.DataFrame, cells: pd.DataFrame, runs: list[RunTables]) -> str:
    """The model list: the models table's registry facts (first run holding the model) with the runs it is in
    and how many tasks it has a score of."""
    seen = cells.groupby("model").agg(runs=("run", lambda r: ", ".join(sorted(set(r)))), n_tasks=("task", "nunique"))
    if len(models):
        m = models.drop_duplicates("model").drop(columns="run").set_index("model")
        m = m.join(seen, how="outer").reset_index()
    else:
        m = seen.reset_index()
    m, hrefs = _model_links(m, "")
    cols = ["model", "display", "params", "architecture_family", "tokenizer_type", "pretraining_domain", "runs"]
    spec = table_spec(
        m,
        columns=[*_show(cols, m, runs), "n_tasks"],
        labels={"n_tasks": "tasks scored"},
        filters=("architecture_family", "tokenizer_type", "pretraining_domain"),
        sort=("model", "asc"),
        hrefs=hrefs,
        digits=0,
    )
    return embed("models", spec)


#: the other tracks on a model's (and a task's) page: (table, heading, what makes the table, columns shown, the
#: column drawn with its interval and the interval's columns)
_TRACKS: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, str, str] | None], ...] = (
    (
        "zeroshot_leaderboard",
        "Zero-shot scores",
        "a zero-shot stage (config zeroshot.tasks; config/zeroshot.yaml)",
        (
            "run",
            "scorer",
            "task",
            "value",
            "rank",
            "auprc",
            "auroc_within_strata",
            "reference",
            "twin",
            "gain_over_twin",
            "shortcut_flag",
            "incomplete_reason",
        ),  # fmt: skip
        ("value", "ci_low", "ci_high"),
    ),
    (
        "finetune_vs_probe",
        "Fine-tuned against probed",
        "the finetune-lora protocol (config/finetune.yaml)",
        ("run", "probe_protocol", "regime", "level", "category", "mcc_probe", "mcc_finetune", "gain", "note"),
        ("gain", "gain_ci_low", "gain_ci_high"),
    ),
    (
        "pretraining_gain",
        "Pretraining gain over its random-init twin",
        "twins: true (config/twins.yaml)",
        (
            "run",
            "protocol",
            "regime",
            "level",
            "category",
            "task",
            "twin",
            "mcc_model",
            "mcc_twin",
            "gain",
            "p_holm",
            "note",
        ),  # fmt: skip
        ("gain", "gain_ci_low", "gain_ci_high"),
    ),
    (
        "cost",
        "What it cost to run",
        "the cost table (results/tables/cost.parquet, written with the extraction)",
        (
            "run",
            "task",
            "hardware",
            "dtype",
            "seconds_load",
            "seconds_compute",
            "sequences",
            "bases_per_s",
            "tokens_per_s",
            "peak_memory_bytes",
            "peak_memory_kind",
        ),  # fmt: skip
        None,
    ),
)


def track_sections(runs: list[RunTables], key: str, value: str, prefix: str) -> list[str]:
    """One section per other track (`_TRACKS`) with the rows whose `key` (model or task) is `value`: a table, or a
    line saying why there is none (no run made the table, or it has no row of `value`). The zero-shot section of a
    model is followed by the model-free baselines of its zero-shot tasks (their shortcut flags)."""
    body: list[str] = []
    for table, title, made_by, columns, ci in _TRACKS:
        rows = labelled(runs, table)
        if len(rows.columns) and key not in rows.columns:
            continue  # a table without this page's key (finetune_vs_probe has no task column): not its page
        body.append(heading(title))
        if rows.empty:
            body.append(note(f"not in these runs: the table {table} comes with {made_by}"))
            continue
        mine = rows[rows[key].astype(str) == value]
        if mine.empty:
            body.append(note(f"no row of {value} in {table} (it has {rows[key].nunique()} other {key}s)"))
            continue
        bands = {ci[0]: (ci[1], ci[2])} if ci else None
        body.append(embed(f"{prefix}-{table}", table_spec(mine, columns=_show(list(columns), mine, runs), ci=bands)))
        if table == "zeroshot_leaderboard" and key == "model":
            body += _baselines_of(runs, set(mine["task"]), prefix)
    return body


def _baselines_of(runs: list[RunTables], tasks: set[str], prefix: str) -> list[str]:
    """The model-free baselines of the zero-shot `tasks` (zeroshot_shortcuts), beside the model's scores."""
    base = labelled(runs, "zeroshot_shortcuts")
    if base.empty:
        return []
    base = base[base["task"].isin(tasks)]
    columns = ["run", "task", "baseline", "metric", "value", "shortcut_flag", "shortcut_reason"]
    return [
        heading("Model-free baselines of these zero-shot tasks", 3),
        embed(
            f"{prefix}-zeroshot-baselines",
            table_spec(base, columns=_show(columns, base, runs), ci={"value": ("ci_low", "ci_high")}),
        ),
    ]


def model_page(
    model: str, runs: list[RunTables], board: pd.DataFrame, cells: pd.DataFrame, models: pd.DataFrame
) -> list[str]:
    """The body of a model's page: its registry card, per run its provenance (extraction key and probe
    versions), its leaderboard rows, the tasks it covers with their scores, those it left out with why, and its
    answers on every other track that ran (`track_sections`: zero-shot with the tasks' model-free baselines,
    fine-tune against probe, the gain over its random-init twin, cost)."""
    body = [heading("Card")]
    facts = models[models["model"] == model] if len(models) else models
    hidden = {"run", "settings_hash", "input_sha256", "geneb_commit", "geneb_dirty"}
    body.append(
        card({str(k): v for k, v in facts.iloc[0].items() if k not in hidden})
        if len(facts)
        else note("not in any run's models table")
    )
    for run in runs:
        if run.label not in set(cells.loc[cells["model"] == model, "run"]) and run.label not in set(
            board.loc[board["model"] == model, "run"]
        ):
            continue
        body.append(heading(f"Provenance in run {run.label}", 3))
        records = extraction_records(run, model)
        body += [card(extraction_facts(r)) for r in records] or [
            note("no embedding file of this model is recorded on disk for this run (scores_inputs.json, resources/)")
        ]
        probe = probe_provenance(run, model)
        body.append(
            card({f"probe {k}": v for k, v in probe.items()})
            if probe
            else note("the run's score table records no probe provenance for this model")
        )
    mine_board = board[board["model"] == model]
    body += [heading("Leaderboard rows"), board_table(mine_board, runs, "model-board", "../")]
    mine = cells[cells["model"] == model]
    body += [heading("Tasks covered"), cells_table(mine, runs, "model-cells", "../", by_task=False)]
    out = pd.concat([left_out(run, model, cells[cells["run"] == run.label]) for run in runs], ignore_index=True)
    out, hrefs = _model_links(out, "../")
    body.append(heading("Tasks left out"))
    body.append(
        embed(
            "model-left-out",
            table_spec(
                out, columns=_show(["run", "task", "category", "why"], out, runs), filters=("run",), hrefs=hrefs
            ),
        )
        if len(out)
        else note("none: the model has a score of every task of its runs")
    )
    return body + track_sections(runs, "model", model, "model")


def task_page(task: str, runs: list[RunTables], cells: pd.DataFrame, audit: pd.DataFrame) -> list[str]:
    """The body of a task's page: per run its card, its task audit (with the reasons it is flagged), and every
    model's score of it."""
    body = []
    for run in runs:
        here = cells[(cells["run"] == run.label) & (cells["task"] == task)]
        a = audit[(audit["run"] == run.label) & (audit["task"] == task)] if len(audit) else audit
        if here.empty and a.empty:
            continue
        suffix = f" (run {run.label})" if len(runs) > 1 else ""
        c = task_card(run, task)
        body += [
            heading("Card" + suffix),
            card(card_facts(c)) if c else note("no task card recorded on disk for this run"),
        ]
        body.append(heading("Audit" + suffix))
        flags = (run.attrs.get(TASK_FLAGS_ATTR) or {}).get(task)
        if flags:
            body.append(
                note("⚑ fails the task audit: " + "; ".join(f"{k}: {v}" for k, v in sorted(flags.items())), "warn")
            )
        body.append(
            card({str(k): v for k, v in a.iloc[0].items() if k not in ("run", "task", "geneb_commit", "geneb_dirty")})
            if len(a)
            else note("no task audit table in this run")
        )
    body += [
        heading("Every model's score"),
        cells_table(cells[cells["task"] == task], runs, "task-cells", "../", by_task=True),
    ]
    return body + track_sections(runs, "task", task, "task")
