"""The score-table contract (`scores`, read it first), its assembly from probe tables (`aggregate`), agreement
with a committed reference across machines (`agreement`) and whether a table is older than its inputs
(`freshness`)."""
