"""Building a random-init twin's network (`geneb.registry.twins`): the model's own class from its configuration,
with seeded random weights, in place of `from_pretrained`. The weights are never read."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import torch

from geneb.core.errors import ModelLoadError


def random_init_network(
    auto_cls: Any,
    where: str,
    config: Any,
    *,
    model: str,
    seed: int,
    config_kwargs: Mapping[str, Any],
    dtype: torch.dtype,
) -> Any:
    """`auto_cls.from_config(config)` after `torch.manual_seed(seed)`: the class's own weight initialisation
    (transformers' `_init_weights`, or the remote code's), so one seed and one torch version give one set of
    weights. config: the checkpoint's configuration with the registry's overrides, or None to read it from
    `where` (`AutoConfig.from_pretrained(where, **config_kwargs)`: revision, trust_remote_code). Returns the
    network in `dtype`. Raises ModelLoadError naming the model when the class cannot be built from its
    configuration."""
    from transformers import AutoConfig

    try:
        if config is None:
            config = AutoConfig.from_pretrained(where, **config_kwargs)
        torch.manual_seed(int(seed))
        network = auto_cls.from_config(config, trust_remote_code=bool(config_kwargs.get("trust_remote_code")))
    except (AttributeError, TypeError, ValueError, KeyError, OSError) as err:
        first = str(err).splitlines()[0][:300] if str(err) else ""
        raise ModelLoadError(
            f"model {model}: its random-init twin cannot be built from the configuration of {where} "
            f"({type(err).__name__}: {first})"
        ) from err
    return network.to(dtype)


def state_sha256(network: Any) -> str:
    """sha256 over the network's state dict (names, dtypes, shapes and bytes, in name order): the identity of
    a twin's random weights (the checkpoint's weight files are not what runs)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(network.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        if t.numel():
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
