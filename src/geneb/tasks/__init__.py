"""The task layer: `catalogue` (config/tasks.tsv and the task lock), `sources` (mirror folder, HTTP mirror,
Hugging Face), `validation` (alphabet policy, labels, hygiene reports, one-pass file checks), `prepare`
(`prepare_task`: a source task -> checked parquet splits plus a task card; read it first), `audit` (shortcut
features, single-feature AUROCs, the audit step) and `homology` (train/test homology leakage with MMseqs2)."""
