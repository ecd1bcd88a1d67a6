"""The task layer: `catalogue` (config/tasks.tsv and the task lock), `sources` (mirror folder, HTTP mirror,
Hugging Face), `validation` (alphabet policy, labels, hygiene reports, one-pass file checks), `prepare`
(`prepare_task`: a source task -> checked parquet splits plus a task card; read it first), `audit` (shortcut
features, single-feature AUROCs, the audit step) and `homology` (train/test homology leakage with MMseqs2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "audit_prepared": "geneb.tasks.audit",
    "feature_matrix": "geneb.tasks.audit",
    "feature_names": "geneb.tasks.audit",
    "GROUPS": "geneb.tasks.audit",
    "read_audit": "geneb.tasks.audit",
    "CatalogueError": "geneb.tasks.catalogue",
    "changes": "geneb.tasks.catalogue",
    "fix_hint": "geneb.tasks.catalogue",
    "lock_identity": "geneb.tasks.catalogue",
    "read_catalogue": "geneb.tasks.catalogue",
    "read_lock": "geneb.tasks.catalogue",
    "records": "geneb.tasks.catalogue",
    "relock": "geneb.tasks.catalogue",
    "source_string": "geneb.tasks.catalogue",
    "task_row": "geneb.tasks.catalogue",
    "validate_catalogue": "geneb.tasks.catalogue",
    "CATALOGUE_COLUMNS_USED": "geneb.tasks.prepare",
    "data_hash": "geneb.tasks.prepare",
    "prepare_from_params": "geneb.tasks.prepare",
    "read_card": "geneb.tasks.prepare",
    "stratified_cap": "geneb.tasks.prepare",
    "TaskCard": "geneb.tasks.prepare",
    "check_meta_digests": "geneb.tasks.sources",
    "ENV_PAPER_TASK_SOURCE": "geneb.tasks.sources",
    "ENV_TASK_SOURCE": "geneb.tasks.sources",
    "file_record": "geneb.tasks.sources",
    "HttpMirror": "geneb.tasks.sources",
    "MirrorFolder": "geneb.tasks.sources",
    "missing_splits": "geneb.tasks.sources",
    "NotOnServer": "geneb.tasks.sources",
    "open_source": "geneb.tasks.sources",
    "resolve_source_string": "geneb.tasks.sources",
    "source_identity": "geneb.tasks.sources",
    "TaskDigestError": "geneb.tasks.sources",
    "TaskSourceError": "geneb.tasks.sources",
    "AlphabetPolicy": "geneb.tasks.validation",
    "LETTER_KEYS": "geneb.tasks.validation",
    "model_input": "geneb.tasks.validation",
    "reverse_complement": "geneb.tasks.validation",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.tasks.audit import GROUPS as GROUPS
    from geneb.tasks.audit import audit_prepared as audit_prepared
    from geneb.tasks.audit import feature_matrix as feature_matrix
    from geneb.tasks.audit import feature_names as feature_names
    from geneb.tasks.audit import read_audit as read_audit
    from geneb.tasks.catalogue import CatalogueError as CatalogueError
    from geneb.tasks.catalogue import changes as changes
    from geneb.tasks.catalogue import fix_hint as fix_hint
    from geneb.tasks.catalogue import lock_identity as lock_identity
    from geneb.tasks.catalogue import read_catalogue as read_catalogue
    from geneb.tasks.catalogue import read_lock as read_lock
    from geneb.tasks.catalogue import records as records
    from geneb.tasks.catalogue import relock as relock
    from geneb.tasks.catalogue import source_string as source_string
    from geneb.tasks.catalogue import task_row as task_row
    from geneb.tasks.catalogue import validate_catalogue as validate_catalogue
    from geneb.tasks.prepare import CATALOGUE_COLUMNS_USED as CATALOGUE_COLUMNS_USED
    from geneb.tasks.prepare import TaskCard as TaskCard
    from geneb.tasks.prepare import data_hash as data_hash
    from geneb.tasks.prepare import prepare_from_params as prepare_from_params
    from geneb.tasks.prepare import read_card as read_card
    from geneb.tasks.prepare import stratified_cap as stratified_cap
    from geneb.tasks.sources import ENV_PAPER_TASK_SOURCE as ENV_PAPER_TASK_SOURCE
    from geneb.tasks.sources import ENV_TASK_SOURCE as ENV_TASK_SOURCE
    from geneb.tasks.sources import HttpMirror as HttpMirror
    from geneb.tasks.sources import MirrorFolder as MirrorFolder
    from geneb.tasks.sources import NotOnServer as NotOnServer
    from geneb.tasks.sources import TaskDigestError as TaskDigestError
    from geneb.tasks.sources import TaskSourceError as TaskSourceError
    from geneb.tasks.sources import check_meta_digests as check_meta_digests
    from geneb.tasks.sources import file_record as file_record
    from geneb.tasks.sources import missing_splits as missing_splits
    from geneb.tasks.sources import open_source as open_source
    from geneb.tasks.sources import resolve_source_string as resolve_source_string
    from geneb.tasks.sources import source_identity as source_identity
    from geneb.tasks.validation import LETTER_KEYS as LETTER_KEYS
    from geneb.tasks.validation import AlphabetPolicy as AlphabetPolicy
    from geneb.tasks.validation import model_input as model_input
    from geneb.tasks.validation import reverse_complement as reverse_complement
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
