"""The paper's analyses on GENEB score tables: leaderboards and Borda rank, rank instability, scale, matched
pairs, few-shot, task difficulty, contamination, recommendation; the published-results importer, the
comparison with the published leaderboard and the submission writer. Methods and terms: docs/analyses.md.
"""
