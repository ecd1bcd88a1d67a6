"""The analyses on GENEB score tables, grouped by the question they answer (methods and terms: docs/analyses.md):

* `ranking`: who is ahead: leaderboards and Borda rank, tiers, rank instability, recommendation, contamination;
* `paper`: the paper's analyses (scale, matched pairs, few-shot, difficulty) and its published results
  (import, reproduction, comparison with a new model, submission file);
* `evaluation`: how much of a ranking is the evaluation choice (views, sensitivity, best layer);
* `controls`: is the task measuring the model (task audit) and does pretraining help (random-init twins);
* `stats`: the paired bootstrap and paired tests they share; `inputs`: the score-table contract and metadata.

The modules at this level run them: `registry` (every analysis table and its function), `context`, `run`,
`steps` (the rules' entry points), `write` (tables and summary to disk) and `outputs` (the table names the
workflow reads).
"""
