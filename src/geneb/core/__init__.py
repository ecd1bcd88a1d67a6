"""Primitives that import no other GENEB layer: `integrity` (atomic writes and content digests), `provenance`,
`paths` (the one home of repository paths and the workflow's JSON schemas), `envs` (runtime environment files and
their venvs), `yamlio` (the one YAML reader), `logs`, `errors`, `ipc` (what the model server and its clients agree
on), `download` and `categories` (the 13 functional categories)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "CATEGORIES": "geneb.core.categories",
    "check_category": "geneb.core.categories",
    "DeadlineDownloader": "geneb.core.download",
    "DEFAULT_DEADLINE_S": "geneb.core.download",
    "DEFAULT_READ_TIMEOUT_S": "geneb.core.download",
    "build_env": "geneb.core.envs",
    "DEFAULT_ENV": "geneb.core.envs",
    "env_names": "geneb.core.envs",
    "env_status": "geneb.core.envs",
    "EnvError": "geneb.core.envs",
    "EnvFile": "geneb.core.envs",
    "ENVS_DIR": "geneb.core.envs",
    "python_for_env": "geneb.core.envs",
    "read_env": "geneb.core.envs",
    "DroppedInputError": "geneb.core.errors",
    "EmptyPoolError": "geneb.core.errors",
    "ExtractionError": "geneb.core.errors",
    "ItemOutOfMemoryError": "geneb.core.errors",
    "LayerNotExposedError": "geneb.core.errors",
    "LongSequenceError": "geneb.core.errors",
    "LooksLikeLogitsError": "geneb.core.errors",
    "MaxLengthError": "geneb.core.errors",
    "MissingPackageError": "geneb.core.errors",
    "ModelForwardError": "geneb.core.errors",
    "ModelLoadError": "geneb.core.errors",
    "NonFiniteEmbeddingError": "geneb.core.errors",
    "PaddingVarianceError": "geneb.core.errors",
    "RemoteCodeError": "geneb.core.errors",
    "TokenIdRangeError": "geneb.core.errors",
    "TransformersVersionError": "geneb.core.errors",
    "UnknownTokenError": "geneb.core.errors",
    "WeightsNotLoadedError": "geneb.core.errors",
    "atomic_path": "geneb.core.integrity",
    "IntegrityError": "geneb.core.integrity",
    "read_parquet": "geneb.core.integrity",
    "write_text_atomic": "geneb.core.integrity",
    "code_fingerprint": "geneb.core.ipc",
    "error_message": "geneb.core.ipc",
    "held": "geneb.core.ipc",
    "listen": "geneb.core.ipc",
    "rebuild_error": "geneb.core.ipc",
    "receive": "geneb.core.ipc",
    "send": "geneb.core.ipc",
    "server_dir": "geneb.core.ipc",
    "ServerPaths": "geneb.core.ipc",
    "ServerSpec": "geneb.core.ipc",
    "stopped_when_idle": "geneb.core.ipc",
    "ERROR_MARK": "geneb.core.logs",
    "failure_lines": "geneb.core.logs",
    "log_to_file": "geneb.core.logs",
    "load_schema": "geneb.core.paths",
    "PACKAGE_DIR": "geneb.core.paths",
    "repo_root": "geneb.core.paths",
    "SCHEMA_DIR": "geneb.core.paths",
    "schema_errors": "geneb.core.paths",
    "schema_problems": "geneb.core.paths",
    "section": "geneb.core.paths",
    "validate_with_defaults": "geneb.core.paths",
    "cached_file_sha256": "geneb.core.provenance",
    "canonical_json": "geneb.core.provenance",
    "check_hash": "geneb.core.provenance",
    "code_revision": "geneb.core.provenance",
    "CodeRevision": "geneb.core.provenance",
    "dirty_label": "geneb.core.provenance",
    "file_sha256": "geneb.core.provenance",
    "package_versions": "geneb.core.provenance",
    "params_hash": "geneb.core.provenance",
    "REVISION": "geneb.core.provenance",
    "stable_hash": "geneb.core.provenance",
    "stable_params": "geneb.core.provenance",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.core.categories import CATEGORIES as CATEGORIES
    from geneb.core.categories import check_category as check_category
    from geneb.core.download import DEFAULT_DEADLINE_S as DEFAULT_DEADLINE_S
    from geneb.core.download import DEFAULT_READ_TIMEOUT_S as DEFAULT_READ_TIMEOUT_S
    from geneb.core.download import DeadlineDownloader as DeadlineDownloader
    from geneb.core.envs import DEFAULT_ENV as DEFAULT_ENV
    from geneb.core.envs import ENVS_DIR as ENVS_DIR
    from geneb.core.envs import EnvError as EnvError
    from geneb.core.envs import EnvFile as EnvFile
    from geneb.core.envs import build_env as build_env
    from geneb.core.envs import env_names as env_names
    from geneb.core.envs import env_status as env_status
    from geneb.core.envs import python_for_env as python_for_env
    from geneb.core.envs import read_env as read_env
    from geneb.core.errors import DroppedInputError as DroppedInputError
    from geneb.core.errors import EmptyPoolError as EmptyPoolError
    from geneb.core.errors import ExtractionError as ExtractionError
    from geneb.core.errors import ItemOutOfMemoryError as ItemOutOfMemoryError
    from geneb.core.errors import LayerNotExposedError as LayerNotExposedError
    from geneb.core.errors import LongSequenceError as LongSequenceError
    from geneb.core.errors import LooksLikeLogitsError as LooksLikeLogitsError
    from geneb.core.errors import MaxLengthError as MaxLengthError
    from geneb.core.errors import MissingPackageError as MissingPackageError
    from geneb.core.errors import ModelForwardError as ModelForwardError
    from geneb.core.errors import ModelLoadError as ModelLoadError
    from geneb.core.errors import NonFiniteEmbeddingError as NonFiniteEmbeddingError
    from geneb.core.errors import PaddingVarianceError as PaddingVarianceError
    from geneb.core.errors import RemoteCodeError as RemoteCodeError
    from geneb.core.errors import TokenIdRangeError as TokenIdRangeError
    from geneb.core.errors import TransformersVersionError as TransformersVersionError
    from geneb.core.errors import UnknownTokenError as UnknownTokenError
    from geneb.core.errors import WeightsNotLoadedError as WeightsNotLoadedError
    from geneb.core.integrity import IntegrityError as IntegrityError
    from geneb.core.integrity import atomic_path as atomic_path
    from geneb.core.integrity import read_parquet as read_parquet
    from geneb.core.integrity import write_text_atomic as write_text_atomic
    from geneb.core.ipc import ServerPaths as ServerPaths
    from geneb.core.ipc import ServerSpec as ServerSpec
    from geneb.core.ipc import code_fingerprint as code_fingerprint
    from geneb.core.ipc import error_message as error_message
    from geneb.core.ipc import held as held
    from geneb.core.ipc import listen as listen
    from geneb.core.ipc import rebuild_error as rebuild_error
    from geneb.core.ipc import receive as receive
    from geneb.core.ipc import send as send
    from geneb.core.ipc import server_dir as server_dir
    from geneb.core.ipc import stopped_when_idle as stopped_when_idle
    from geneb.core.logs import ERROR_MARK as ERROR_MARK
    from geneb.core.logs import failure_lines as failure_lines
    from geneb.core.logs import log_to_file as log_to_file
    from geneb.core.paths import PACKAGE_DIR as PACKAGE_DIR
    from geneb.core.paths import SCHEMA_DIR as SCHEMA_DIR
    from geneb.core.paths import load_schema as load_schema
    from geneb.core.paths import repo_root as repo_root
    from geneb.core.paths import schema_errors as schema_errors
    from geneb.core.paths import schema_problems as schema_problems
    from geneb.core.paths import section as section
    from geneb.core.paths import validate_with_defaults as validate_with_defaults
    from geneb.core.provenance import REVISION as REVISION
    from geneb.core.provenance import CodeRevision as CodeRevision
    from geneb.core.provenance import cached_file_sha256 as cached_file_sha256
    from geneb.core.provenance import canonical_json as canonical_json
    from geneb.core.provenance import check_hash as check_hash
    from geneb.core.provenance import code_revision as code_revision
    from geneb.core.provenance import dirty_label as dirty_label
    from geneb.core.provenance import file_sha256 as file_sha256
    from geneb.core.provenance import package_versions as package_versions
    from geneb.core.provenance import params_hash as params_hash
    from geneb.core.provenance import stable_hash as stable_hash
    from geneb.core.provenance import stable_params as stable_params
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
