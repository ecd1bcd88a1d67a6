# Stage 4: every probe table of this config -> one long-format score table.
# A local rule: seconds of work, so on a cluster it is not worth a Slurm job (docs/hpc.md).


localrules:
    aggregate_scores,


rule aggregate_scores:
    input:
        tables=probe_tables,
        failures=failure_files,
        cards=PLAN.layout.task_cards(),
        audits=PLAN.layout.task_audits(),
        # every resources/ file the probes read (embeddings, shot draws): recorded beside the table, so reading it
        # after another run rewrote one of them says so (geneb.tables.freshness)
        resources=resource_files,
    output:
        results("tables/scores.parquet"),
        inputs=results("tables/scores_inputs.json"),
    log:
        "logs/aggregate_scores.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/aggregate_scores.py"


# What each (model, task) extraction cost, from the embedding files' cost attributes (geneb.tables.cost); seconds.
localrules:
    cost_table,


rule cost_table:
    input:
        embeddings=embedding_files,
    output:
        results("tables/cost.parquet"),
    log:
        "logs/cost_table.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/cost_table.py"


# Quality versus cost: the Pareto-optimal models per (protocol, regime, category), measured and analytic cost
# (geneb.analysis.pareto).
localrules:
    pareto_table,


rule pareto_table:
    input:
        leaderboard=results("tables/leaderboard.parquet"),
        intervals=results("tables/rank_intervals.parquet"),
        cost=results("tables/cost.parquet"),
    output:
        results("tables/pareto.parquet"),
    log:
        "logs/pareto_table.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        model_sheet=config["model_sheet"],
    script:
        "../scripts/pareto_table.py"
