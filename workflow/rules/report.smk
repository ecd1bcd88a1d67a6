# Stage 7: one self-contained HTML page per run (tables, figures, config, versions); the same outputs are
# annotated for `snakemake --report report.zip`.


# quick table/figure/report steps: run where snakemake runs, not as cluster jobs
localrules:
    report,
    compare_published_report,


rule report:
    input:
        leaderboard=results("tables/leaderboard.parquet"),
        rank_separability=results("tables/rank_separability.parquet"),
        scores=results("tables/scores.parquet"),
        task_audit=results("tables/task_audit.parquet"),
        tables=analysis_table_files(results("tables/{name}.parquet")),
        summary=results("tables/analysis_summary.json"),
        figures=figure_files(results("figures/{name}.png")),
        cards=PLAN.layout.task_cards(),
        # the zero-shot section's tables and figure, when the config has a zero-shot stage
        zeroshot=zeroshot_report_inputs,
    output:
        report(
            results("report/geneb_report.html"),
            caption="../report/html_report.rst",
            category="Report",
        ),
    log:
        "logs/report/report.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        config=report_config,
        captions=CAPTION_TEXTS,
        protocol=config["default_protocol"],
        regime="full",
        title="GENEB report",
    script:
        "../scripts/report.py"


use rule report as published_report with:
    input:
        leaderboard=results("published/tables/leaderboard.parquet"),
        rank_separability=results("published/tables/rank_separability.parquet"),
        tables=analysis_table_files(results("published/tables/{name}.parquet")),
        summary=results("published/tables/analysis_summary.json"),
        figures=figure_files(results("published/figures/{name}.png")),
        reproduce=results("published/tables/reproduce_paper.parquet"),
    output:
        report(
            results("published/report/geneb_report.html"),
            caption="../report/html_report.rst",
            category="Published results",
        ),
    log:
        "logs/report/published_report.log",
    params:
        config=report_config,
        captions=CAPTION_TEXTS,
        protocol=PUBLISHED_PROTOCOL,
        regime="full",
        title="GENEB: the paper's published results (40 models), reanalysed",


rule published:
    input:
        results("published/report/geneb_report.html"),
        results("published/tables/reproduce_paper.parquet"),
        results("published/tables/leaderboard.parquet"),
        results("published/tables/rank_separability.parquet"),


# The comparison with the paper's published models as a report of its own (docs/analyses.md, "Your models beside
# the paper's 40"): `snakemake compare_published`.
rule compare_published_report:
    input:
        board=results("tables/compare_published.parquet"),
        left_out=results("tables/compare_published_left_out.parquet"),
        tasks=results("tables/compare_published_tasks.parquet"),
        summary=results("tables/compare_published_summary.json"),
        # the run cards (scores_inputs.json beside it: the embedding files) and the registry's facts
        scores=results("tables/scores.parquet"),
        models=config["model_sheet"],
    output:
        html=report(
            results("report/compare_published.html"),
            caption="../report/compare_published.rst",
            category="Report",
        ),
        png=results("figures/compare_published.png"),
        pdf=results("figures/compare_published.pdf"),
        # the k-shot regimes' figures (the published models have every regime, so the report draws each)
        kshot=multiext(results("figures/compare_published_"), "10shot.png", "10shot.pdf", "1shot.png", "1shot.pdf"),
    log:
        "logs/report/compare_published.log",
    conda:
        "../../envs/geneb.yaml"
    script:
        "../scripts/compare_report.py"


rule compare_published:
    input:
        results("report/compare_published.html"),
        results("tables/compare_published.parquet"),
