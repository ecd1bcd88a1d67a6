"""Beside the probes: parameter-efficient fine-tuning (`finetune-lora`; docs/protocols.md): `recipe` (the
protocol and its errors), `plan` (the protocol's part of the run plan: its cells, rerun keys and resources,
torch-free), `train` (one cell's network and training) and `job` (the workflow step, read it first)."""
