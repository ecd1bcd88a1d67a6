"""The self-contained HTML report of a run (`html.build_report`) and the captions it shares with
`snakemake --report` (`captions`: one caption file each, workflow/report/*.rst)."""
