# Stage 4: every probe table of this config -> one long-format score table.
# A local rule: seconds of work, so on a cluster it is not worth a Slurm job (docs/hpc.md).


localrules:
    aggregate_scores,


rule aggregate_scores:
    input:
        tables=probe_tables,
        failures=failure_files,
        cards=task_cards(),
        audits=expand("resources/tasks/{task}/audit.json", task=config["tasks"]),
    output:
        results("tables/scores.parquet"),
    log:
        "logs/aggregate_scores.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/aggregate_scores.py"
