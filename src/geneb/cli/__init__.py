"""`geneb`: read GENEB results without writing code (one module per subcommand group; `app` builds the parser).

    geneb models [--runnable]          list the models of the registry: facts, env, source kind, pin, and
                                       whether each is runnable here (and why not)
    geneb tasks [--category C]         list the tasks of the catalogue
    geneb tasks lock [TASK ...] [--configfile C ...]
                                       re-lock tasks on purpose: digest their source files now and write them to
                                       the task lock (config task_lock; geneb.tasks.catalogue), printing what changed
    geneb leaderboard [--category C] [--regime R] [--top N]
                                       print the leaderboard of a category (default macro) and regime
    geneb leaderboard --model ID [--category C] [--regime R]
                                       where one model stands: rank of N, CI and tier per category and regime
    geneb recommend --category C [--regime R]
                                       the best model(s) for a category, with ties where CIs overlap
    geneb recommend --model ID [--category C] [--regime R]
                                       one model's standing: rank, CI, distance to the best, tier
    geneb site --results-dir DIR [--results-dir DIR2 ...] --out SITE
                                       write the static leaderboard site of one or more runs (docs/site.md)
    geneb pin-revisions MODEL ... [--ref main]
                                       move lockfile pins to the commit a ref points to now (needs network;
                                       the first workflow run pins unpinned models by itself)
    geneb weights fetch MODEL ... [--config C]
                                       fetch (download, unpack) the weights of models whose weights are outside
                                       the hub into the weights cache, ahead of a run on offline compute nodes
    geneb weights list [--config C]    the models with weights outside the hub: given, cached, or what to fetch
    geneb env list [--prefix DIR]      the runtime environments (envs/*.yaml), the models each serves, built or not
    geneb env build NAME [--prefix DIR] [--python PY]
                                       build (or reuse) the pip venv of envs/NAME.yaml (docs/hpc.md, "Environments")
    geneb sbatch-preview [snakemake arguments]
                                       the sbatch call of every job a Slurm run would submit (geneb.run.sbatch_preview)
    geneb recover [snakemake arguments]
                                       resume a run killed hard (geneb.run.recover; docs/hpc.md, "Resuming")

Running the benchmark is `snakemake`; this command reads its outputs (`results/tables/*.parquet`) and the
configuration sheets, and wraps two Snakemake calls for clusters (sbatch-preview, recover: every argument
after the command goes to snakemake; `python -m geneb.run.sbatch_preview` and `python -m geneb.run.recover` are the
same commands). Exit status 2, with a one-line `geneb: error: ...` on stderr and no traceback, for
bad arguments or missing/invalid inputs (a file that is not the table or sheet the command reads, a
category with nothing in it). Output cut short by its reader (`geneb models | head`) ends quietly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "main": "geneb.cli.app",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.cli.app import main as main
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
