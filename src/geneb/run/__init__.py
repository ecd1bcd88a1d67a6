"""Running the workflow: the run plan, rerun params, Slurm resources, pre-flight, partial runs, recovery and the
sbatch preview."""
