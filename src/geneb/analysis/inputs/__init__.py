"""What the analyses read: the score-table contract and its reduction to cells, model and task metadata, and the
`models` table of the models analysed."""
