"""Stage 3c, beside the probes: parameter-efficient fine-tuning (`finetune-lora`; docs/protocols.md)."""
