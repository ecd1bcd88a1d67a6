# Stage 1: a task from its source (mirror folder, HTTP mirror, Hugging Face) -> checked parquet + task card.
# A local rule: on a cluster it runs beside the main Snakemake process (login nodes reach the network,
# compute nodes often do not; docs/hpc.md), never as a Slurm job.


localrules:
    prepare_task,


rule prepare_task:
    output:
        train="resources/tasks/{task}/{thash}/train.parquet",
        test="resources/tasks/{task}/{thash}/test.parquet",
        card="resources/tasks/{task}/{thash}/card.json",
    # validation.json (every problem of the task's files, or ok and the letter counts) is a log, not an
    # output: Snakemake keeps a failed job's logs, and nothing downstream may trust it in place of the card
    log:
        "logs/prepare_task/{thash}/{task}.log",
        validation="resources/tasks/{task}/{thash}/validation.json",
    conda:
        "../../envs/geneb.yaml"
    params:
        task=task_params,
    script:
        "../scripts/prepare_task.py"


# Once per task, never per model: shortcut single-feature AUROCs and train/test homology (MMseqs2) on the
# prepared rows; the probes score every model again on the test rows without a training homolog (value_clean).
# Threads: execution.threads (1 by default), as extraction: MMseqs2 on a capped task spends about 1.5 CPU seconds,
# mostly in single-threaded steps, so a 2-thread audit held both cores of a 2-core machine while using one; the
# audit is the same at 1 and 2 threads (docs/performance.md, "Where the quickstart's time goes").
rule audit_task:
    input:
        train="resources/tasks/{task}/{thash}/train.parquet",
        test="resources/tasks/{task}/{thash}/test.parquet",
        card="resources/tasks/{task}/{thash}/card.json",
    output:
        "resources/tasks/{task}/{thash}/audit-{ahash}.json",
    log:
        "logs/audit_task/{ahash}/{thash}/{task}.log",
    benchmark:
        "benchmarks/audit_task/{ahash}/{thash}/{task}.tsv"
    conda:
        "../../envs/geneb.yaml"
    threads: config["execution"]["threads"]
    params:
        settings=audit_settings,
    script:
        "../scripts/audit_task.py"
