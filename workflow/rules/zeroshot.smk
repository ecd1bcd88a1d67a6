# Stage 3b, beside the probes: zero-shot scoring (docs/zeroshot.md). Each zero-shot task is built from real tasks
# (or fetched from a source) once; each model scores it with no training in one job per (model, task), on the GPU
# where extraction would use one; the k-mer Markov baselines are fitted on a declared background of other tasks;
# one local rule turns the per-row scores into the metrics, the leaderboard and the rank correlation with the probe
# leaderboard. params carry the rerun keys (geneb.zeroshot.plan); device, batch size and threads are knobs.


localrules:
    build_zeroshot_task,
    zeroshot_tables,
    zeroshot_figure,
    zeroshot,


rule build_zeroshot_task:
    output:
        rows="resources/zeroshot/tasks/{zstask}/{zthash}/rows.tsv",
        meta="resources/zeroshot/tasks/{zstask}/{zthash}/meta.json",
    log:
        "logs/build_zeroshot_task/{zstask}/{zthash}.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        task=zeroshot_task_params,
    script:
        "../scripts/build_zeroshot_task.py"


rule score_zeroshot:
    input:
        rows="resources/zeroshot/tasks/{zstask}/{zthash}/rows.tsv",
        meta="resources/zeroshot/tasks/{zstask}/{zthash}/meta.json",
    output:
        "resources/zeroshot/scores/{model}/{xhash}/{zstask}/{zthash}-{shash}.parquet",
    log:
        "logs/score_zeroshot/{model}/{xhash}/{zstask}/{zthash}-{shash}.log",
    benchmark:
        "benchmarks/score_zeroshot/{model}/{xhash}/{zstask}/{zthash}-{shash}.tsv"
    # the default env: Snakemake cannot containerize a function-valued env of a rule outside the initial DAG
    # (docs/zeroshot.md, "In the workflow")
    conda:
        "../../envs/geneb.yaml"
    threads: config["execution"]["threads"]
    # the model's extraction resources: a GPU where its extraction uses one, the profile's partitions
    resources:
        gpu=extraction_gpus,
        gres=extraction_gres,
        slurm_partition=extraction_partition,
        mem_mb=extraction_mem_mb,
        runtime=extraction_runtime,
        extract_slot=1,
    params:
        settings=extraction_params,
        scoring=zeroshot_score_params,
    script:
        "../scripts/score_zeroshot.py"


rule zeroshot_baselines:
    input:
        unpack(zeroshot_baseline_inputs),
    output:
        "resources/zeroshot/baselines/{zstask}/{zthash}-{bhash}.parquet",
    log:
        "logs/zeroshot_baselines/{zstask}/{zthash}-{bhash}.log",
    conda:
        "../../envs/geneb.yaml"
    threads: 1
    params:
        baselines=zeroshot_baseline_params,
    script:
        "../scripts/zeroshot_baselines.py"


rule zeroshot_tables:
    input:
        unpack(zeroshot_table_inputs),
    output:
        scores=results("tables/zeroshot_scores.parquet"),
        row_scores=results("tables/zeroshot_row_scores.parquet"),
        leaderboard=results("tables/zeroshot_leaderboard.parquet"),
        vs_probe=results("tables/zeroshot_vs_probe.parquet"),
        not_applicable=results("tables/zeroshot_not_applicable.parquet"),
        shortcuts=results("tables/zeroshot_shortcuts.parquet"),
    log:
        "logs/zeroshot_tables.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        tables=zeroshot_table_params,
    script:
        "../scripts/zeroshot_tables.py"


rule zeroshot_figure:
    input:
        leaderboard=results("tables/zeroshot_leaderboard.parquet"),
        vs_probe=results("tables/zeroshot_vs_probe.parquet"),
        probe_leaderboard=results("tables/leaderboard.parquet"),
    output:
        png=report(results("figures/zeroshot.png"), caption="../report/zeroshot.rst", category="Zero-shot"),
        pdf=results("figures/zeroshot.pdf"),
    log:
        "logs/figures/zeroshot_figure.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        protocol=config["default_protocol"],
    script:
        "../scripts/zeroshot_figure.py"


rule zeroshot:
    input:
        PLAN.zeroshot.outputs(),
