# Stage 5: the paper's analyses on the score tables (docs/analyses.md). The published results of the paper's
# 40 models go through the same rules under results/published/ (rules published_*), so they never clash with
# a run's own outputs. params carry the analysis settings (the rerun key).


# quick table/figure/report steps: run where snakemake runs, not as cluster jobs
localrules:
    leaderboard,
    task_audit_table,
    import_published,
    reproduce_paper,
    compare_published_tables,
    submission,
    submissions,


rule leaderboard:
    input:
        scores=results("tables/scores.parquet"),
        models=config["model_sheet"],
        tasks=config["task_sheet"],
        task_audit=results("tables/task_audit.parquet"),
    output:
        leaderboard=report(
            results("tables/leaderboard.parquet"),
            caption="../report/leaderboard.rst",
            category="Tables",
        ),
        leaderboard_tasks=results("tables/leaderboard_tasks.parquet"),
        contamination=results("tables/contamination.parquet"),
        rank_separability=results("tables/rank_separability.parquet"),
        leaderboard_clean=results("tables/leaderboard_clean.parquet"),
    log:
        "logs/analysis/leaderboard.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        analysis=config["analysis"],
        leaderboard=config["leaderboard"],
        view="geneb",
        # the models a protocol skips, with the reason (finetune-lora: no torch network): the boards' coverage notes
        coverage=PLAN.coverage_notes(),
    script:
        "../scripts/leaderboard.py"


# one row per task: best shortcut MCC, single-feature AUROCs and flags, overlap and homolog counts
rule task_audit_table:
    input:
        scores=results("tables/scores.parquet"),
        audits=PLAN.layout.task_audits(),
        cards=PLAN.layout.task_cards(),
        models=config["model_sheet"],
    output:
        results("tables/task_audit.parquet"),
    log:
        "logs/analysis/task_audit_table.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        protocol=config["default_protocol"],
    script:
        "../scripts/task_audit_table.py"


rule analyses:
    input:
        scores=results("tables/scores.parquet"),
        predictions=prediction_tables,
        models=config["model_sheet"],
        tasks=config["task_sheet"],
    output:
        tables=analysis_table_files(results("tables/{name}.parquet")),
        summary=results("tables/analysis_summary.json"),
    log:
        "logs/analysis/analyses.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        analysis=config["analysis"],
        view="geneb",
    script:
        "../scripts/analyses.py"


rule import_published:
    input:
        **PUBLISHED_FILES,
    output:
        results("published/tables/scores.parquet"),
    log:
        "logs/analysis/import_published.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/import_published.py"


use rule leaderboard as published_leaderboard with:
    input:
        scores=results("published/tables/scores.parquet"),
        models=config["model_sheet"],
        tasks=config["task_sheet"],
        paper_models=PUBLISHED_FILES["models"],
        registry=PUBLISHED_REGISTRY,
    output:
        leaderboard=results("published/tables/leaderboard.parquet"),
        leaderboard_tasks=results("published/tables/leaderboard_tasks.parquet"),
        contamination=results("published/tables/contamination.parquet"),
        rank_separability=results("published/tables/rank_separability.parquet"),
    log:
        "logs/analysis/published_leaderboard.log",
    params:
        analysis=config["analysis"],
        leaderboard=config["leaderboard"],
        view="published",


use rule analyses as published_analyses with:
    input:
        scores=results("published/tables/scores.parquet"),
        models=config["model_sheet"],
        tasks=config["task_sheet"],
        paper_models=PUBLISHED_FILES["models"],
        registry=PUBLISHED_REGISTRY,
    output:
        tables=analysis_table_files(results("published/tables/{name}.parquet")),
        summary=results("published/tables/analysis_summary.json"),
    log:
        "logs/analysis/published_analyses.log",
    params:
        analysis=config["analysis"],
        view="published",


rule reproduce_paper:
    input:
        claims=config["analysis"]["published"]["claims"],
        summary=results("published/tables/analysis_summary.json"),
        leaderboard=results("published/tables/leaderboard.parquet"),
        models=results("published/tables/models.parquet"),
    output:
        report(
            results("published/tables/reproduce_paper.parquet"),
            caption="../report/reproduce_paper.rst",
            category="Published results",
        ),
    log:
        "logs/analysis/reproduce_paper.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/reproduce_paper.py"


rule compare_published_tables:
    input:
        scores=results("tables/scores.parquet"),
        published=results("published/tables/scores.parquet"),
        models=config["model_sheet"],
        tasks=config["task_sheet"],
        cards=PLAN.layout.task_cards(),
    output:
        board=report(
            results("tables/compare_published.parquet"),
            caption="../report/compare_published.rst",
            category="Tables",
        ),
        left_out=results("tables/compare_published_left_out.parquet"),
        tasks=results("tables/compare_published_tasks.parquet"),
        summary=results("tables/compare_published_summary.json"),
    log:
        "logs/analysis/compare_published.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        analysis=config["analysis"],
    script:
        "../scripts/compare_published.py"


rule submission:
    input:
        scores=results("tables/scores.parquet"),
        models=config["model_sheet"],
        tasks=config["task_sheet"],
        spec=PUBLISHED_FILES["spec"],
        cards=PLAN.layout.task_cards(),
    output:
        results("submissions/{model}.json"),
    log:
        "logs/analysis/submission/{model}.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        submitted_by=config["analysis"]["submission"]["submitted_by"],
    script:
        "../scripts/submission.py"


rule submissions:
    input:
        PLAN.submission_files(),
