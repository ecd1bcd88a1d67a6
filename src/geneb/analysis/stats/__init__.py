"""The statistics every analysis shares: paired (two-level) bootstrap replicates and paired tests between cells."""
