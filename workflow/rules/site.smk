# Stage 7b: the static leaderboard site of this run (geneb.site; docs/site.md): `snakemake site`. The same as
# `geneb site --results-dir <results_dir> --out <results_dir>/site`.


localrules:
    build_site,
    site,


rule build_site:
    input:
        leaderboard=results("tables/leaderboard.parquet"),
        cells=results("tables/leaderboard_tasks.parquet"),
        contamination=results("tables/contamination.parquet"),
        scores=results("tables/scores.parquet"),
        task_audit=results("tables/task_audit.parquet"),
        tables=analysis_table_files(results("tables/{name}.parquet")),
        summary=results("tables/analysis_summary.json"),
        figures=figure_files(results("figures/{name}.png")),
        cards=PLAN.layout.task_cards(),
    output:
        directory(results("site")),
    log:
        "logs/site/site.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        captions=CAPTION_TEXTS,
    script:
        "../scripts/build_site.py"


rule site:
    input:
        results("site"),
