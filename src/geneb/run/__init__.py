"""Running the workflow: the run plan (`plan`, read it first) and its parts (`layout`: cache paths, rerun keys
and resources; `stages`: the zero-shot and fine-tuning stages; `checks`: the config checks and pre-flight;
`integrity`: the files a run trusts), the Snakefile's handlers (`handlers`), partial runs (`partial`), recovery
(`recover`) and the sbatch preview (`sbatch_preview`)."""
