"""Beside the probes: parameter-efficient fine-tuning (`finetune-lora`; docs/protocols.md): `recipe` (the
protocol and its errors), `train` (one cell's network and training) and `job` (the workflow step, read it first)."""
