"""Leaderboards and ranks: the category, macro and micro leaderboards with Borda rank, statistically tied tiers,
rank instability and intervals, the category-aware recommendation, and the contaminated cells they leave out."""
