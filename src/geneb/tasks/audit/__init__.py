"""Task audit: is a task measuring the model? Shortcut features a trivial classifier could use
(`shortcuts`, `single_feature`), train/test homology leakage found with MMseqs2 (`homology`), and one audit
record per task (`audit`). Torch-free."""
