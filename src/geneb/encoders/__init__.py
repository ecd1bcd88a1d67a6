"""The torch side: the encoder contract (`protocol`, read it first), the token-model engine (`engine`),
weight loading (`loading`) and one adapter per family (`families`, GENEB's own networks beside the adapter that
loads them). Nothing here is imported while the workflow plans."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "encoder_device": "geneb.encoders.engine.batching",
    "network_parameters": "geneb.encoders.engine.batching",
    "get_layer": "geneb.encoders.engine.checks",
    "Chunk": "geneb.encoders.engine.chunking",
    "pool": "geneb.encoders.engine.chunking",
    "TokenModelEncoder": "geneb.encoders.engine.tokenmodel",
    "embed_at_positions": "geneb.encoders.engine.views",
    "embed_views": "geneb.encoders.engine.views",
    "NoTokenPositions": "geneb.encoders.engine.views",
    "HFLanguageModelEncoder": "geneb.encoders.families.hf",
    "NoLanguageHeadError": "geneb.encoders.families.hf",
    "PythonEncoder": "geneb.encoders.families.python_encoder",
    "wrap_callable": "geneb.encoders.families.python_encoder",
    "deferred_load_checks": "geneb.encoders.protocol",
    "EmbedCounters": "geneb.encoders.protocol",
    "EmbedResult": "geneb.encoders.protocol",
    "Encoder": "geneb.encoders.protocol",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.encoders.engine.batching import encoder_device as encoder_device
    from geneb.encoders.engine.batching import network_parameters as network_parameters
    from geneb.encoders.engine.checks import get_layer as get_layer
    from geneb.encoders.engine.chunking import Chunk as Chunk
    from geneb.encoders.engine.chunking import pool as pool
    from geneb.encoders.engine.tokenmodel import TokenModelEncoder as TokenModelEncoder
    from geneb.encoders.engine.views import NoTokenPositions as NoTokenPositions
    from geneb.encoders.engine.views import embed_at_positions as embed_at_positions
    from geneb.encoders.engine.views import embed_views as embed_views
    from geneb.encoders.families.hf import HFLanguageModelEncoder as HFLanguageModelEncoder
    from geneb.encoders.families.hf import NoLanguageHeadError as NoLanguageHeadError
    from geneb.encoders.families.python_encoder import PythonEncoder as PythonEncoder
    from geneb.encoders.families.python_encoder import wrap_callable as wrap_callable
    from geneb.encoders.protocol import EmbedCounters as EmbedCounters
    from geneb.encoders.protocol import EmbedResult as EmbedResult
    from geneb.encoders.protocol import Encoder as Encoder
    from geneb.encoders.protocol import deferred_load_checks as deferred_load_checks
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
