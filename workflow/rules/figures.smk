# Stage 6: the paper's figures (PNG and PDF) from the analysis tables; the published results' figures go to
# results/published/figures/. Captions: workflow/report/*.rst (shared with the HTML report).


# quick table/figure/report steps: run where snakemake runs, not as cluster jobs
localrules:
    paper_figures,


rule paper_figures:
    input:
        leaderboard="results/tables/leaderboard.parquet",
        tables=expand("results/tables/{name}.parquet", name=ANALYSIS_TABLES),
    output:
        heatmap=report(
            "results/figures/heatmap.png",
            caption="../report/heatmap.rst",
            category="Figures",
        ),
        scale=report(
            "results/figures/scale.png",
            caption="../report/scale.rst",
            category="Figures",
        ),
        rank_bump=report(
            "results/figures/rank_bump.png",
            caption="../report/rank_bump.rst",
            category="Figures",
        ),
        fewshot=report(
            "results/figures/fewshot.png",
            caption="../report/fewshot.rst",
            category="Figures",
        ),
        matched_pairs=report(
            "results/figures/matched_pairs.png",
            caption="../report/matched_pairs.rst",
            category="Figures",
        ),
        task_variance=report(
            "results/figures/task_variance.png",
            caption="../report/task_variance.rst",
            category="Figures",
        ),
        pdf=expand("results/figures/{name}.pdf", name=FIGURES),
    log:
        "logs/figures/paper_figures.log",
    conda:
        "../envs/geneb.yaml"
    params:
        protocol=config["default_protocol"],
        regime="full",
    script:
        "../scripts/figures.py"


use rule paper_figures as published_figures with:
    input:
        leaderboard="results/published/tables/leaderboard.parquet",
        tables=expand("results/published/tables/{name}.parquet", name=ANALYSIS_TABLES),
    output:
        heatmap=report(
            "results/published/figures/heatmap.png",
            caption="../report/heatmap.rst",
            category="Published results",
        ),
        scale=report(
            "results/published/figures/scale.png",
            caption="../report/scale.rst",
            category="Published results",
        ),
        rank_bump=report(
            "results/published/figures/rank_bump.png",
            caption="../report/rank_bump.rst",
            category="Published results",
        ),
        fewshot=report(
            "results/published/figures/fewshot.png",
            caption="../report/fewshot.rst",
            category="Published results",
        ),
        matched_pairs=report(
            "results/published/figures/matched_pairs.png",
            caption="../report/matched_pairs.rst",
            category="Published results",
        ),
        task_variance=report(
            "results/published/figures/task_variance.png",
            caption="../report/task_variance.rst",
            category="Published results",
        ),
        pdf=expand("results/published/figures/{name}.pdf", name=FIGURES),
    log:
        "logs/figures/published_figures.log",
    params:
        protocol="geneb-paper",
        regime="full",
