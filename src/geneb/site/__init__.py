"""The static leaderboard site of one or more runs (`geneb site`, rule `site`; docs/site.md): `build.build_site`."""
