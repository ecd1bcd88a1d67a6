"""What one model's extraction jobs ask of the scheduler (GPU or not, partition, gres, memory), as `RunPlan`
methods (its base class) over the portable resources of `geneb.run.resources`; site values come from the config's
`slurm:` section that the profiles fill in (docs/hpc.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from geneb.registry.families import family as model_family
from geneb.registry.python_entry import cpu_only
from geneb.registry.registry import Registry, model_spec
from geneb.run import resources as job_resources


class ExtractionResources:
    """Mixed into `geneb.run.plan.RunPlan`: the resources of each configured model's extraction jobs."""

    if TYPE_CHECKING:
        config: dict[str, Any]
        registry: Registry
        extraction_settings: Mapping[str, dict[str, Any]]

    def extraction_wants_gpu(self, model: str) -> bool:
        """Whether the model's extraction jobs need a GPU node: a torch model when execution.device is cuda/auto;
        never a CPU-only encoder (a family that does not use torch: the k-mer spectra, the shortcut features; a python
        entry with `load.cpu_only`; precomputed vectors) or device cpu."""
        settings = self.extraction_settings[model]
        uses_gpu = model_family(settings["family"]).uses_torch and not cpu_only(settings)  # load.cpu_only: no GPU
        return job_resources.extraction_gpus(uses_gpu, self.config["execution"]["device"]) > 0

    def extraction_gpus(self, model: str) -> int:
        """The `gpu` resource (sbatch --gpus) of the model's extraction jobs: 1 when it needs a GPU
        (`extraction_wants_gpu`) and the site takes --gpus; 0 for a CPU job, and where the profile asks for GPUs
        as --gres instead (config slurm.gpu_gres, `extraction_gres`)."""
        return int(self.extraction_wants_gpu(model) and not self.config["slurm"]["gpu_gres"])

    def extraction_partition(self, model: str) -> str | None:
        """The `slurm_partition` resource of the model's extraction jobs: the profile's slurm.gpu_partition for a
        job that needs a GPU, slurm.cpu_partition for a CPU job (a k-mer model, device cpu), so a CPU-only
        encoder never lands in the GPU partition; None (the profile's default partition) when not set."""
        slurm = self.config["slurm"]
        return slurm["gpu_partition"] if self.extraction_wants_gpu(model) else slurm["cpu_partition"]

    def extraction_gres(self, model: str) -> str | None:
        """The `gres` resource (sbatch --gres) of the model's extraction jobs: the profile's slurm.gpu_gres for a
        job that needs a GPU (sites that refuse --gpus, profiles/slurm-gres), None for a CPU job or when unset."""
        return self.config["slurm"]["gpu_gres"] if self.extraction_wants_gpu(model) else None

    def extraction_mem_mb(self, model: str, attempt: int) -> int:
        """Host memory (MB) of one extraction job: base + weights (registry `params`), doubled on each retry."""
        return job_resources.extraction_mem_mb(model_spec(self.registry, model).params, attempt)
