"""Running the workflow: the run plan (`plan`, read it first), which holds its parts as objects (`layout`: cache
paths, rerun keys and extraction resources; `integrity`: the files a run trusts; the zero-shot and fine-tuning
stages' parts live with their stages, `geneb.zeroshot.plan` and `geneb.finetune.plan`), the config checks and
pre-flight (`checks`), the Snakefile's handlers (`handlers`), partial runs (`partial`), recovery (`recover`) and the
sbatch preview (`sbatch_preview`)."""
