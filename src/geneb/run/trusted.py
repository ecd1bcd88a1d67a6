"""The files of a run that a later step trusts, as `RunPlan` methods (its base class): what the plan checks by content
before the DAG is built (`geneb.run.set_aside`), `geneb verify` checks offline, and the default target rebuilds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from geneb.analysis.outputs import all_tables

if TYPE_CHECKING:
    from geneb.run.set_aside import BadFile


class TrustedFiles:
    """Mixed into `geneb.run.plan.RunPlan`, whose path methods (the resources/ layout) these build on."""

    if TYPE_CHECKING:
        config: dict[str, Any]
        bad_files: tuple[BadFile, ...]

        @property
        def tasks(self) -> list[str]: ...
        @property
        def models(self) -> list[str]: ...
        def results_path(self, path: str) -> str: ...
        def embedding_file(self, model: str, task: str) -> str: ...
        def task_file(self, task: str, name: str) -> str: ...
        def audit_file(self, task: str) -> str: ...
        def shot_file(self, protocol: str, task: str) -> str: ...
        def probe_tables(self, tasks: list[str] | None = None, *, kind: str = "probes") -> list[str]: ...
        def zeroshot_trusted_files(self) -> list[str]: ...

    def result_tables(self) -> list[str]:
        """The parquet tables under results_dir/tables that the default targets read back: the score table, the
        leaderboard and analysis tables (`geneb.analysis.outputs.all_tables`), the clean leaderboard, the task
        audit table."""
        names = dict.fromkeys(("scores", *all_tables(), "leaderboard_clean", "task_audit"))
        return [self.results_path(f"tables/{name}.parquet") for name in names]

    def trusted_files(self) -> list[str]:
        """Every file of this run that a later step reads back and that GENEB writes with a content digest
        (`geneb.core.integrity`): the prepared tasks (splits, card, audit), the shot files, the embedding files,
        the probe and prediction tables, the result tables, the zero-shot scores and tables; upstream first."""
        tasks = [self.task_file(t, n) for t in self.tasks for n in ("train.parquet", "test.parquet", "card.json")]
        tasks += [self.audit_file(t) for t in self.tasks]
        shots = [self.shot_file(p, t) for p in self.config["protocols"] for t in self.tasks]
        embeddings = [self.embedding_file(m, t) for m in self.models for t in self.tasks]
        probes = self.probe_tables() + self.probe_tables(kind="predictions")
        return [*tasks, *shots, *embeddings, *probes, *self.result_tables(), *self.zeroshot_trusted_files()]

    def rebuild_targets(self) -> list[str]:
        """The files planning moved aside (bad content, `bad_files`): inputs of the default target, so this run
        builds them again and everything downstream of them (Snakemake alone reruns no job for a missing
        intermediate file; geneb.run.set_aside). [] in a dry run, which moves nothing."""
        return [str(b.path) for b in self.bad_files if b.aside is not None]
