"""Running the workflow: the run plan (`plan`, read it first), which holds its parts as objects (`layout`: cache
paths, rerun keys and extraction resources; `integrity`: the files a run trusts; the zero-shot and fine-tuning
stages' parts live with their stages, `geneb.zeroshot.plan` and `geneb.finetune.plan`), the config checks and
pre-flight (`checks`), the Snakefile's handlers (`handlers`), partial runs (`partial`), recovery (`recover`) and the
sbatch preview (`sbatch_preview`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "check_config": "geneb.run.checks",
    "default_schema_files": "geneb.run.checks",
    "read_yaml": "geneb.run.checks",
    "verify_files": "geneb.run.integrity",
    "embedding_path": "geneb.run.layout",
    "model_embeddings_dir": "geneb.run.layout",
    "report_config": "geneb.run.layout",
    "plan_run": "geneb.run.plan",
    "plan_workflow": "geneb.run.plan",
    "RunPlan": "geneb.run.plan",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.run.checks import check_config as check_config
    from geneb.run.checks import default_schema_files as default_schema_files
    from geneb.run.checks import read_yaml as read_yaml
    from geneb.run.integrity import verify_files as verify_files
    from geneb.run.layout import embedding_path as embedding_path
    from geneb.run.layout import model_embeddings_dir as model_embeddings_dir
    from geneb.run.layout import report_config as report_config
    from geneb.run.plan import RunPlan as RunPlan
    from geneb.run.plan import plan_run as plan_run
    from geneb.run.plan import plan_workflow as plan_workflow
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
