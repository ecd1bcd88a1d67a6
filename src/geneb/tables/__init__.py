"""The score-table contract (`scores`) and its assembly from probe tables (`aggregate`, `hygiene_columns`)."""
