# Stage 6: the paper's figures (PNG and PDF) from the analysis tables; the published results' figures go to
# results/published/figures/. Figures, outputs and captions (workflow/report/*.rst, shared with the HTML report)
# come from the figure registry (geneb.figures.registry) through common.smk.


# quick table/figure/report steps: run where snakemake runs, not as cluster jobs
localrules:
    paper_figures,


rule paper_figures:
    input:
        leaderboard=results("tables/leaderboard.parquet"),
        tables=analysis_table_files(results("tables/{name}.parquet")),
    output:
        **figure_reports(results("figures/{name}.png"), category="Figures"),
        pdf=figure_files(results("figures/{name}.pdf")),
    log:
        "logs/figures/paper_figures.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        protocol=config["default_protocol"],
        regime="full",
    script:
        "../scripts/figures.py"


use rule paper_figures as published_figures with:
    input:
        leaderboard=results("published/tables/leaderboard.parquet"),
        tables=analysis_table_files(results("published/tables/{name}.parquet")),
    output:
        **figure_reports(results("published/figures/{name}.png"), category="Published results"),
        pdf=figure_files(results("published/figures/{name}.pdf")),
    log:
        "logs/figures/published_figures.log",
    params:
        protocol=PUBLISHED_PROTOCOL,
        regime="full",
