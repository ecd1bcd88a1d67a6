# Stage 7: one self-contained HTML page per run (tables, figures, config, versions); the same outputs are
# annotated for `snakemake --report report.zip`.


# quick table/figure/report steps: run where snakemake runs, not as cluster jobs
localrules:
    report,


rule report:
    input:
        leaderboard=results("tables/leaderboard.parquet"),
        scores=results("tables/scores.parquet"),
        tables=analysis_table_files(results("tables/{name}.parquet")),
        summary=results("tables/analysis_summary.json"),
        figures=figure_files(results("figures/{name}.png")),
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
        captions=caption_texts(),
        protocol=config["default_protocol"],
        regime="full",
        title="GENEB report",
    script:
        "../scripts/report.py"


use rule report as published_report with:
    input:
        leaderboard=results("published/tables/leaderboard.parquet"),
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
        captions=caption_texts(),
        protocol=PUBLISHED_PROTOCOL,
        regime="full",
        title="GENEB: the paper's published results (40 models), reanalysed",


rule published:
    input:
        results("published/report/geneb_report.html"),
        results("published/tables/reproduce_paper.parquet"),
        results("published/tables/leaderboard.parquet"),
