"""The `geneb` parser and entry point: every subcommand group in its module of `geneb.cli`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from geneb.cli.common import CliError, Parser, positive_int
from geneb.cli.cost import add_budget_arguments, add_plan_command, cmd_recommend_budget
from geneb.cli.models import (
    cmd_env_build,
    cmd_env_list,
    cmd_models,
    cmd_pin_revisions,
    cmd_tasks,
    cmd_tasks_lock,
    cmd_weights_fetch,
    cmd_weights_list,
)
from geneb.cli.results import cmd_compare_cells, cmd_leaderboard
from geneb.cli.runs import (
    DEFAULT_OUT,
    add_pool_commands,
    cmd_recover,
    cmd_sbatch_preview,
    cmd_site,
    cmd_verify,
    cmd_zeroshot_baselines,
    cmd_zeroshot_build,
    cmd_zeroshot_reference_lms,
)
from geneb.core.categories import CATEGORIES
from geneb.core.integrity import IntegrityError
from geneb.tables.scores import REGIMES, AnalysisInputError


def _build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the `geneb` command."""
    p = Parser(prog="geneb", description="Read GENEB results: models, tasks, leaderboards, recommendations.")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser(
        "models", help="list the models of the registry: facts, env, source, pin, runnable here and why not"
    )
    m.add_argument("--sheet", default="config/models.yaml", help="the model registry (default config/models.yaml)")
    m.add_argument("--pins", default="config/model_revisions.yaml", help="the lockfile of pinned hub revisions")
    m.add_argument("--runnable", action="store_true", help="list only the models runnable here")
    m.add_argument("--twins", action="store_true", help="list the random-init twins (`<model>-twin`) too")
    m.add_argument(
        "--config",
        default="config/config.yaml",
        help="the workflow config whose model_weights are applied (if present)",
    )
    m.set_defaults(func=cmd_models)
    t = sub.add_parser("tasks", help="list the tasks of the catalogue")
    t.add_argument("--sheet", default="config/tasks.tsv", help="the task catalogue (default config/tasks.tsv)")
    t.add_argument("--category", help=f"one of: {', '.join(CATEGORIES)}")
    t.add_argument(
        "--set", choices=["paper", "mirror"], help="only the tasks of this set: the paper's 100 or the local mirror's"
    )
    t.set_defaults(func=cmd_tasks)
    t_sub = t.add_subparsers(dest="tasks_command", required=False, metavar="{lock}")
    tl = t_sub.add_parser(
        "lock",
        help="re-lock tasks on purpose: digest their source files now and write them to the config's task_lock",
        description="Fetch each task's source files from its source now (http and hub files downloaded again), write "
        "their sha256 and size to the task lock (config key task_lock, default config/tasks.lock) and print what "
        "changed. A later run whose files differ from the lock is refused until they are re-locked.",
    )
    tl.add_argument("tasks", nargs="*", metavar="TASK", help="task ids (default: the config's tasks)")
    tl.add_argument(
        "--configfile",
        nargs="+",
        default=["config/config.yaml"],
        help="the workflow config file(s), merged in order as snakemake merges them (default config/config.yaml)",
    )
    tl.add_argument("--set", choices=["paper", "mirror"], help="every task of this set of the catalogue")
    tl.add_argument("--download-dir", default="resources/downloads", help="where an http mirror's files are cached")
    tl.set_defaults(func=cmd_tasks_lock)
    pr = sub.add_parser("pin-revisions", help="move lockfile pins to the commit a ref points to now (needs network)")
    pr.add_argument("models", nargs="+", help="registry ids of hub models")
    pr.add_argument("--ref", default="main", help="branch or tag to resolve (default main)")
    pr.add_argument("--sheet", default="config/models.yaml", help="the model registry (default config/models.yaml)")
    pr.add_argument(
        "--pins",
        default="config/model_revisions.yaml",
        help="the lockfile of pinned hub revisions to update (default config/model_revisions.yaml)",
    )
    pr.add_argument("--endpoint", default=None, help="hub endpoint (default: HF_ENDPOINT or huggingface.co)")
    pr.set_defaults(func=cmd_pin_revisions)
    w = sub.add_parser("weights", help="fetch or list the weights of models whose weights are outside the hub")
    w_sub = w.add_subparsers(dest="weights_command", required=True)
    for name, func, help_ in (
        (
            "fetch",
            cmd_weights_fetch,
            "download / unpack the weights of MODEL ... into the weights cache (needs network)",
        ),
        ("list", cmd_weights_list, "each model with weights outside the hub: given, cached, or what to fetch"),
    ):
        ws = w_sub.add_parser(name, help=help_)
        if name == "fetch":
            ws.add_argument("models", nargs="+", help="registry ids of models of source kind external or download")
        ws.add_argument(
            "--config", default="config/config.yaml", help="the workflow config (model_weights, weights_dir)"
        )
        ws.add_argument("--sheet", default="config/models.yaml", help="the model registry (default config/models.yaml)")
        ws.add_argument(
            "--weights-dir", default=None, help="the weights cache (default: the config's execution.weights_dir)"
        )
        ws.set_defaults(func=func)
    zs = sub.add_parser("zeroshot", help="zero-shot tasks: build the catalogued ones from the real tasks")
    zs_sub = zs.add_subparsers(dest="zeroshot_command", required=True)
    zb = zs_sub.add_parser(
        "build",
        help="build the zero-shot tasks of config/zeroshot_tasks.tsv (offline, seeded)",
        description="Build each catalogued zero-shot task from the training splits of its real source tasks into "
        "OUT/<task>/{rows.tsv,meta.json}; meta.json records builder, seed, source digests and parameters. The same "
        "seed gives the same rows (data_sha256).",
    )
    zb.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    zb.add_argument("--seed", type=int, default=0, help="the seed of every random draw (default 0)")
    zb.add_argument("--tasks", nargs="+", metavar="TASK", help="only these catalogued tasks")
    zb.add_argument(
        "--catalogue",
        default="config/zeroshot_tasks.tsv",
        help="the zero-shot task catalogue (default config/zeroshot_tasks.tsv)",
    )
    zb.add_argument(
        "--task-source", help="the mirror folder of real tasks (default $GENEB_TASK_SOURCE, else ../shared/data/tasks)"
    )
    zb.set_defaults(func=cmd_zeroshot_build)
    zm = zs_sub.add_parser(
        "baselines",
        help="model-free baselines of built zero-shot tasks, their shortcut flag and content leak checks",
        description="Score each built zero-shot task with rules that never read the sequence as DNA (substitution, "
        "transition, CpG, codon and window position, local GC; a pair's member composition; and their grouped "
        "cross-validated combination) and flag a task whose best baseline reaches 0.60 with its interval above 0.5; "
        "then compare each task's sequences by shared 31-mers and whole-sequence containment with real tasks' "
        "training splits (docs/zeroshot.md, 'Model-free baselines').",
    )
    zm.add_argument("--tasks-dir", default=DEFAULT_OUT, help=f"the built tasks' folder (default {DEFAULT_OUT})")
    zm.add_argument("--tasks", nargs="+", metavar="TASK", help="only these tasks (default: every folder with rows.tsv)")
    zm.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of each interval (default 1000)")
    zm.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    zm.add_argument(
        "--leak-tasks",
        nargs="*",
        metavar="TASK",
        help="real tasks whose training splits are compared by content (default: the reference language models' "
        "pretraining task; none: no check)",
    )
    zm.add_argument(
        "--task-source", help="the mirror folder of real tasks (default $GENEB_TASK_SOURCE, else ../shared/data/tasks)"
    )
    zm.add_argument("--out", help="also write the baselines table (parquet) here")
    zm.set_defaults(func=cmd_zeroshot_baselines)
    zr = zs_sub.add_parser(
        "reference-lms",
        help="pretrain GENEB's tiny masked and causal reference language models (a few CPU minutes, seeded)",
        description="Pretrain the registry's GENEB-made reference models geneb-tiny-mlm and geneb-tiny-clm into "
        "OUT/<id>/ on the training split of a task no built zero-shot task is made from, so the llr scorer runs on "
        "trained transformer weights (docs/zeroshot.md, 'Reference language models'). A folder made with the same "
        "settings from the same file is kept.",
    )
    zr.add_argument("--out", default="resources/reference_lms", help="output folder (default resources/reference_lms)")
    zr.add_argument(
        "--task-source", help="the mirror folder of real tasks (default $GENEB_TASK_SOURCE, else ../shared/data/tasks)"
    )
    zr.set_defaults(func=cmd_zeroshot_reference_lms)
    env = sub.add_parser("env", help="list or build the runtime environments of envs/ (pip venvs)")
    env_sub = env.add_subparsers(dest="env_command", required=True)
    cache_help = "the folder the venvs are cached under (default $GENEB_ENV_DIR, else .geneb/envs)"
    el = env_sub.add_parser("list", help="each env, the models it serves, whether built and where")
    el.add_argument("--prefix", default=None, help=cache_help)
    el.add_argument("--sheet", default="config/models.yaml", help="the model registry (default config/models.yaml)")
    el.set_defaults(func=cmd_env_list)
    eb = env_sub.add_parser("build", help="build (or reuse) the pip venv of envs/NAME.yaml; prints its python")
    eb.add_argument("name", help="an env name (a file envs/NAME.yaml)")
    eb.add_argument("--prefix", default=None, help=cache_help)
    eb.add_argument("--python", default=None, help="the interpreter to make it from (default: this one)")
    eb.set_defaults(func=cmd_env_build)
    for name, func, table, help_ in (
        ("leaderboard", cmd_leaderboard, "tables/leaderboard.parquet", "print a leaderboard"),
        ("recommend", cmd_recommend_budget, "tables/recommendations.parquet", "recommend a model for a category"),
    ):
        s = sub.add_parser(name, help=help_)
        s.add_argument(
            "--category",
            default=None,
            help="a category, macro or micro (leaderboard default macro; with --model: every category)",
        )
        s.add_argument("--regime", default=None, choices=REGIMES, help="default full (with --model: every regime)")
        s.add_argument("--model", help="one model's rows: where it stands in every category (and regime)")
        s.add_argument(
            "--protocol",
            help="the probing protocol whose rows to read, e.g. geneb-paper or geneb-strict (default geneb-paper when "
            "the table has it, else its first); --model names the model's other protocols",
        )
        s.add_argument(
            "--results-dir",
            default=None,
            help="the run's results_dir (config key; default results): reads its " + table,
        )
        s.add_argument(
            "--table",
            default=None,
            help=f"the table to read (default <results-dir>/{table}; the comparison's compare_published.parquet too)",
        )
        if name == "leaderboard":
            s.add_argument("--top", type=positive_int, default=50, help="print the first N models (default 50)")
            s.add_argument(
                "--clean",
                action="store_true",
                help="the leaderboard on the test rows without a training homolog (leaderboard_clean.parquet beside "
                "the table)",
            )
        if name == "recommend":
            add_budget_arguments(s)
        s.set_defaults(func=func)
    st = sub.add_parser(
        "site",
        help="write the static leaderboard site (HTML pages that open from the file system) of one or more runs",
        description="Build a folder of HTML pages from each run's results folder: the leaderboard (sortable, filterable "
        "by run, protocol, regime, category, view), the task list with the task audit, a page per model and per task, "
        "the figures. Runs that hold the same (model, task, regime, protocol) cell with different values are refused "
        "(docs/site.md).",
    )
    st.add_argument(
        "--results-dir",
        action="append",
        required=True,
        metavar="DIR",
        help="a run's results_dir; give it again per run",
    )
    st.add_argument("--out", required=True, metavar="SITE", help="the site folder to write (new, or a previous site)")
    st.add_argument("--label", action="append", help="a run's name on the site, one per --results-dir, in order")
    st.add_argument("--captions", help="the figure caption folder (default workflow/report, when it exists)")
    st.set_defaults(func=cmd_site)
    add_pool_commands(sub)
    add_plan_command(sub)
    cc = sub.add_parser(
        "compare-cells",
        help="paired test of two cells of a task (model, view, protocol, regime) on the same test items",
        description="MCC(a) - MCC(b) with its paired-bootstrap CI and McNemar's exact test, from the kept "
        "per-item predictions. A cell is key=value,... with keys model, view, protocol, regime; b takes the keys "
        "it does not name from a.",
    )
    cc.add_argument("--task", required=True, help="the task id")
    cc.add_argument("--a", required=True, metavar="CELL", help="e.g. model=X,view=L12|mean|rc0,protocol=geneb-paper")
    cc.add_argument("--b", required=True, metavar="CELL", help="e.g. model=Y (the rest as in --a)")
    cc.add_argument("--predictions", default="results/predictions", help="the predictions folder")
    cc.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples (default 1000)")
    cc.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0; printed with the result)")
    cc.add_argument("--confidence", type=float, default=0.95, help="CI level in (0, 1) (default 0.95)")
    cc.set_defaults(func=cmd_compare_cells)
    v = sub.add_parser(
        "verify",
        help="check a run's prepared tasks, caches and tables against their content digests (exit 1 naming each bad "
        "file)",
    )
    v.add_argument(
        "--config",
        action="append",
        help="the run's config file; give it again for each overlay, in order (default config/config.yaml)",
    )
    v.add_argument(
        "--results-dir",
        default=None,
        help="the run's results_dir, results or a folder below it (default: the config's)",
    )
    v.add_argument(
        "--adopt",
        action="store_true",
        help="record the digest of each file written before GENEB recorded them, when it reads whole",
    )
    v.set_defaults(func=cmd_verify)
    passthrough: tuple[tuple[str, Callable[[argparse.Namespace], int], str], ...] = (
        ("sbatch-preview", cmd_sbatch_preview, "print the sbatch call of every job a Slurm run would submit"),
        ("recover", cmd_recover, "resume a run killed hard: unlock, remove partial files, rerun the incomplete"),
    )
    for name, run_snakemake, help_ in passthrough:
        # every argument after the command goes to snakemake (main passes the unparsed rest); -h is theirs
        s = sub.add_parser(name, help=help_ + " (snakemake arguments follow)", add_help=False)
        s.set_defaults(func=run_snakemake, snakemake_args=[], passthrough=True)
    return p


def _one_line(message: str) -> str:
    """`message` on one line for the `geneb: error:` line: its lines joined by "; ", or by a space after a line
    that ends in ":" (it introduces the next), so no ":;" appears."""
    out = ""
    for line in (raw.strip() for raw in message.splitlines()):
        if line:
            out = line if not out else f"{out}{' ' if out.endswith(':') else '; '}{line}"
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `geneb` console script; returns the exit status."""
    parser = _build_parser()
    args, rest = parser.parse_known_args(argv)
    if getattr(args, "passthrough", False):
        args.snakemake_args = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        out = args.func(args)
    except (CliError, AnalysisInputError, IntegrityError, OSError) as err:
        print(f"geneb: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    if isinstance(out, int):  # a wrapped command printed its own output; this is its exit status
        return out
    try:
        print(out)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (`geneb models | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the flush at exit does not fail again
    return 0


if __name__ == "__main__":
    sys.exit(main())
