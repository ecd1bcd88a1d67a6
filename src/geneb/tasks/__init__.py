"""The task layer: catalogue, sources (mirror folder, HTTP mirror, Hugging Face), alphabet policy, hygiene
reports and the `prepare_task` step that turns a source task into checked parquet files plus a task card."""
