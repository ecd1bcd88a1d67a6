"""The extraction stage: one (model, task) -> one HDF5 embedding file (`step`, read it first), the job that
runs it in the model's env (`job`), the per-node model server and its client (`server`), the HDF5 embedding cache
(`cache`), the batch plan with the execution options and the load-checks record (`batch_plan`), and vectors
computed elsewhere (`precomputed`)."""
