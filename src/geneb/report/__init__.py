"""The self-contained HTML report of a run (`html.build_report`, read it first): its `sections`, the HTML
pieces and captions it shares with `snakemake --report` (`render`), a model's run card (`runcard`) and the
comparison report of `compare_published` (`compare`)."""
