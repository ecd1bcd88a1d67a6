"""The extraction stage: one (model, task) step (`step`), the job that runs it in the model's env (`job`),
the per-node model server (`server`, `client`), the HDF5 embedding cache (`cache`) and the load-checks record."""
