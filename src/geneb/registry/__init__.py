"""The model registry, torch-free and read while the workflow plans: `load` (`load_registry`, the only reader
of config/models.yaml, its checks, runnability and each model's resolved extraction settings; read it first),
`registry` (the typed `Registry`), `spec` (`ModelSpec`, `ExtractionSettings`, views), `families` (the family table,
requirements, random-init twins, zero-shot scorers), `python_entry` (entries a user writes without editing
GENEB) and `weights` (hub pins and weights from outside the hub)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "build": "geneb.registry.families",
    "check_transformers_range": "geneb.registry.families",
    "FAMILIES": "geneb.registry.families",
    "family": "geneb.registry.families",
    "require_modules": "geneb.registry.families",
    "resolved_lm_head": "geneb.registry.families",
    "resolved_scoring": "geneb.registry.families",
    "with_twins": "geneb.registry.families",
    "DEFAULT_EXTRACTION": "geneb.registry.load",
    "environment_refusals": "geneb.registry.load",
    "extraction_hash": "geneb.registry.load",
    "extraction_settings": "geneb.registry.load",
    "load_locked_registry": "geneb.registry.load",
    "load_registry": "geneb.registry.load",
    "not_runnable": "geneb.registry.load",
    "read_merged": "geneb.registry.load",
    "refusals": "geneb.registry.load",
    "required_packages": "geneb.registry.load",
    "runnable": "geneb.registry.load",
    "code_files": "geneb.registry.python_entry",
    "code_folder": "geneb.registry.python_entry",
    "cpu_only": "geneb.registry.python_entry",
    "entry_fingerprint": "geneb.registry.python_entry",
    "ENTRY_POINT_GROUP": "geneb.registry.python_entry",
    "EntryRef": "geneb.registry.python_entry",
    "option_fingerprints": "geneb.registry.python_entry",
    "parse_entry": "geneb.registry.python_entry",
    "PRECOMPUTED": "geneb.registry.python_entry",
    "precomputed_inputs": "geneb.registry.python_entry",
    "PYTHON": "geneb.registry.python_entry",
    "weights_hash": "geneb.registry.python_entry",
    "MERGED_SHEET": "geneb.registry.registry",
    "model_spec": "geneb.registry.registry",
    "Registry": "geneb.registry.registry",
    "RegistryError": "geneb.registry.registry",
    "write_merged_sheet": "geneb.registry.registry",
    "absolute_layer": "geneb.registry.spec",
    "AUTO_DTYPE": "geneb.registry.spec",
    "COMPUTE_DTYPES": "geneb.registry.spec",
    "DEFAULT_VIEW_ID": "geneb.registry.spec",
    "Extraction": "geneb.registry.spec",
    "ExtractionSettings": "geneb.registry.spec",
    "INNER_CV_LAYER": "geneb.registry.spec",
    "InputTransform": "geneb.registry.spec",
    "layer_depth": "geneb.registry.spec",
    "model_depth": "geneb.registry.spec",
    "ModelSpec": "geneb.registry.spec",
    "resolve_views": "geneb.registry.spec",
    "SettingsLike": "geneb.registry.spec",
    "View": "geneb.registry.spec",
    "view_id": "geneb.registry.spec",
    "ViewError": "geneb.registry.spec",
    "ViewSet": "geneb.registry.spec",
    "cache_folder": "geneb.registry.weights",
    "download_name": "geneb.registry.weights",
    "is_archive": "geneb.registry.weights",
    "is_complete": "geneb.registry.weights",
    "materialize": "geneb.registry.weights",
    "PinError": "geneb.registry.weights",
    "resolve_revisions": "geneb.registry.weights",
    "settings_source": "geneb.registry.weights",
    "WEIGHT_KINDS": "geneb.registry.weights",
    "weights_refusal": "geneb.registry.weights",
    "WeightsError": "geneb.registry.weights",
    "write_pins": "geneb.registry.weights",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.registry.families import FAMILIES as FAMILIES
    from geneb.registry.families import build as build
    from geneb.registry.families import check_transformers_range as check_transformers_range
    from geneb.registry.families import family as family
    from geneb.registry.families import require_modules as require_modules
    from geneb.registry.families import resolved_lm_head as resolved_lm_head
    from geneb.registry.families import resolved_scoring as resolved_scoring
    from geneb.registry.families import with_twins as with_twins
    from geneb.registry.load import DEFAULT_EXTRACTION as DEFAULT_EXTRACTION
    from geneb.registry.load import environment_refusals as environment_refusals
    from geneb.registry.load import extraction_hash as extraction_hash
    from geneb.registry.load import extraction_settings as extraction_settings
    from geneb.registry.load import load_locked_registry as load_locked_registry
    from geneb.registry.load import load_registry as load_registry
    from geneb.registry.load import not_runnable as not_runnable
    from geneb.registry.load import read_merged as read_merged
    from geneb.registry.load import refusals as refusals
    from geneb.registry.load import required_packages as required_packages
    from geneb.registry.load import runnable as runnable
    from geneb.registry.python_entry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from geneb.registry.python_entry import PRECOMPUTED as PRECOMPUTED
    from geneb.registry.python_entry import PYTHON as PYTHON
    from geneb.registry.python_entry import EntryRef as EntryRef
    from geneb.registry.python_entry import code_files as code_files
    from geneb.registry.python_entry import code_folder as code_folder
    from geneb.registry.python_entry import cpu_only as cpu_only
    from geneb.registry.python_entry import entry_fingerprint as entry_fingerprint
    from geneb.registry.python_entry import option_fingerprints as option_fingerprints
    from geneb.registry.python_entry import parse_entry as parse_entry
    from geneb.registry.python_entry import precomputed_inputs as precomputed_inputs
    from geneb.registry.python_entry import weights_hash as weights_hash
    from geneb.registry.registry import MERGED_SHEET as MERGED_SHEET
    from geneb.registry.registry import Registry as Registry
    from geneb.registry.registry import RegistryError as RegistryError
    from geneb.registry.registry import model_spec as model_spec
    from geneb.registry.registry import write_merged_sheet as write_merged_sheet
    from geneb.registry.spec import AUTO_DTYPE as AUTO_DTYPE
    from geneb.registry.spec import COMPUTE_DTYPES as COMPUTE_DTYPES
    from geneb.registry.spec import DEFAULT_VIEW_ID as DEFAULT_VIEW_ID
    from geneb.registry.spec import INNER_CV_LAYER as INNER_CV_LAYER
    from geneb.registry.spec import Extraction as Extraction
    from geneb.registry.spec import ExtractionSettings as ExtractionSettings
    from geneb.registry.spec import InputTransform as InputTransform
    from geneb.registry.spec import ModelSpec as ModelSpec
    from geneb.registry.spec import SettingsLike as SettingsLike
    from geneb.registry.spec import View as View
    from geneb.registry.spec import ViewError as ViewError
    from geneb.registry.spec import ViewSet as ViewSet
    from geneb.registry.spec import absolute_layer as absolute_layer
    from geneb.registry.spec import layer_depth as layer_depth
    from geneb.registry.spec import model_depth as model_depth
    from geneb.registry.spec import resolve_views as resolve_views
    from geneb.registry.spec import view_id as view_id
    from geneb.registry.weights import WEIGHT_KINDS as WEIGHT_KINDS
    from geneb.registry.weights import PinError as PinError
    from geneb.registry.weights import WeightsError as WeightsError
    from geneb.registry.weights import cache_folder as cache_folder
    from geneb.registry.weights import download_name as download_name
    from geneb.registry.weights import is_archive as is_archive
    from geneb.registry.weights import is_complete as is_complete
    from geneb.registry.weights import materialize as materialize
    from geneb.registry.weights import resolve_revisions as resolve_revisions
    from geneb.registry.weights import settings_source as settings_source
    from geneb.registry.weights import weights_refusal as weights_refusal
    from geneb.registry.weights import write_pins as write_pins
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
