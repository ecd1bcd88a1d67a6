"""The trainable network of one fine-tune cell: the registry's encoder (loaded through the encoder contract,
`geneb.extract.step.build_encoder`), low-rank adapters or its last block made trainable, and a linear head on the
pooled representation the registry declares (its layer and pooling; chunks of a long row averaged).

Tokenisation, special tokens, chunking and padding are the encoder engine's (`TokenModelEncoder`): the fine-tuned
network sees exactly the model input its probe's embeddings were computed from.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from geneb.encoders.engine.chunking import Chunk
from geneb.encoders.engine.guards import get_layer
from geneb.encoders.engine.pooling import pool
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.finetune.errors import FineTuneInputError
from geneb.finetune.recipe import FALLBACK, LORA, Recipe


@dataclasses.dataclass
class Tokenised:
    """One split's model input: every chunk (`Chunk`: ids with special tokens, pool mask, seq_index = position of
    its row in the split) and the split's UNK counts (rows with an UNK token, UNK tokens)."""

    chunks: list[Chunk]
    n_rows: int
    unknown: tuple[int, int]

    def rows_chunks(self, positions: np.ndarray) -> list[list[Chunk]]:
        """The chunks of each row position in `positions` (int (n,)), in order."""
        by_row: dict[int, list[Chunk]] = {}
        for c in self.chunks:
            by_row.setdefault(c.seq_index, []).append(c)
        return [by_row[int(p)] for p in positions]


def tokenise(encoder: TokenModelEncoder, sequences: list[str], rows: list[int]) -> Tokenised:
    """The encoder engine's chunks of `sequences` (model-input text, as extraction gives it), seq_index = list
    position. Raises what `TokenModelEncoder.chunks_and_unknowns` raises (dropped letters, long rows under
    long_policy error, ...)."""
    chunks, _, _, _, unknown = encoder.chunks_and_unknowns(sequences, rows)
    return Tokenised(chunks, len(sequences), (int(unknown[0]), int(unknown[1])))


def _lora_targets(model: nn.Module, suffixes: tuple[str, ...]) -> list[str]:
    """Full names of the nn.Linear modules whose last name component is one of `suffixes`."""
    return sorted(
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in suffixes
    )


def last_block(model: nn.Module, n_layers: int | None) -> tuple[str, nn.Module]:
    """(name, module) of the network's last block: the last element of the largest nn.ModuleList with n_layers
    elements (any length when n_layers is unknown). Raises FineTuneInputError when there is none."""
    lists = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, nn.ModuleList) and len(m) > 0 and (n_layers is None or len(m) == n_layers)
    ]
    if not lists:
        raise FineTuneInputError(
            f"no list of {n_layers} blocks in {type(model).__name__}: neither LoRA targets nor a last block to train"
        )
    name, blocks = max(lists, key=lambda nm: sum(p.numel() for p in nm[1].parameters()))
    return f"{name}.{len(blocks) - 1}", blocks[len(blocks) - 1]


class Classifier(nn.Module):
    """Encoder network (adapted) + linear head on its pooled representation.

    forward(ids (B, T) long, attn (B, T), pmask (B, T), seg (B,) long: the output row of each chunk, n_out) ->
    logits float32 (n_out, n_classes): each chunk pooled with the registry's pooling over its pool mask, the
    chunks of a row averaged (long_policy chunk_mean), then the head.
    """

    def __init__(self, encoder: TokenModelEncoder, network: nn.Module, n_classes: int) -> None:
        super().__init__()
        # the engine's execution attributes (extraction, model_id, device) are set at run time (init_execution)
        self.encoder: Any = encoder
        self.network = network
        enc: Any = encoder
        width = enc.hidden_size or enc.extraction.embedding_dim
        if not width:
            raise FineTuneInputError(f"model {enc.model_id}: hidden size unknown: no head can be sized")
        self.head = nn.Linear(int(width), n_classes)

    def forward(
        self, ids: torch.Tensor, attn: torch.Tensor, pmask: torch.Tensor, seg: torch.Tensor, n_out: int
    ) -> torch.Tensor:
        enc = self.encoder
        inputs = {"input_ids": ids}
        if enc.uses_attention_mask and not enc.elide_causal_mask:
            inputs["attention_mask"] = attn
        layer = enc.extraction.layer
        enc._captured.clear()
        out = enc._call(inputs, isinstance(layer, int) and layer != -1)
        if isinstance(layer, str):
            hidden = enc._captured[0]
        else:
            hidden = get_layer(out, layer, model=enc.model_id, n_layers=enc.n_layers)
        pooled = pool(hidden.float(), pmask, enc.extraction.pooling)
        summed = torch.zeros(n_out, pooled.shape[1], dtype=pooled.dtype, device=pooled.device)
        summed.index_add_(0, seg, pooled)
        counts = torch.bincount(seg, minlength=n_out).clamp(min=1).to(pooled.dtype)
        result: torch.Tensor = self.head(summed / counts[:, None])
        return result

    def batch(self, row_chunks: list[list[Chunk]]) -> tuple[torch.Tensor, ...]:
        """(ids, attn, pmask, seg) of the rows' chunks, padded by the engine (`batch_tensors`), on the device."""
        flat = [c for cs in row_chunks for c in cs]
        seg = torch.tensor([i for i, cs in enumerate(row_chunks) for _ in cs], dtype=torch.long)
        ids, attn, pmask = self.encoder.batch_tensors(flat)
        dev = self.encoder.device
        return ids.to(dev), attn.to(dev), pmask.to(dev), seg.to(dev)


@dataclasses.dataclass
class Adapted:
    """A cell's network: the classifier, its trainable parameters (name -> tensor), and what was adapted."""

    classifier: Classifier
    method: str
    targets: list[str]

    def trainable(self) -> dict[str, nn.Parameter]:
        """The trainable parameters by name (adapter or last block, and the head)."""
        return {n: p for n, p in self.classifier.named_parameters() if p.requires_grad}

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """A copy of the trainable tensors (what a checkpoint and the kept adapter hold)."""
        return {n: p.detach().clone() for n, p in self.trainable().items()}

    def load_trainable(self, state: dict[str, torch.Tensor]) -> None:
        """Copy `state` (from `trainable_state`) into the trainable parameters; KeyError on a name mismatch."""
        params = self.trainable()
        if set(state) != set(params):
            raise KeyError(f"trainable parameters differ: {sorted(set(state) ^ set(params))[:5]}")
        with torch.no_grad():
            for n, p in params.items():
                p.copy_(state[n])


def adapt(
    encoder: TokenModelEncoder, pristine: nn.Module, family: str, recipe: Recipe, n_classes: int, seed: int
) -> Adapted:
    """A fresh trainable network for one cell: a copy of `pristine` (the encoder's loaded network, never
    changed), LoRA (peft `inject_adapter_in_model`, rank/alpha/dropout of the recipe) on the linear modules named
    by `recipe.targets_for(family)`, or, when the recipe names none for the family or none match, its last block
    (`last_block`) trainable; plus the linear head. Everything else frozen. Initialisation is seeded:
    `torch.manual_seed(seed)` before the adapters and the head are created."""
    from peft import LoraConfig, inject_adapter_in_model

    network = copy.deepcopy(pristine)
    for p in network.parameters():
        p.requires_grad_(False)
    torch.manual_seed(seed)
    targets = _lora_targets(network, recipe.targets_for(family))
    if targets:
        cfg = LoraConfig(r=recipe.rank, lora_alpha=recipe.alpha, lora_dropout=recipe.dropout, target_modules=targets)
        network = inject_adapter_in_model(cfg, network)
        for name, p in network.named_parameters():
            p.requires_grad_("lora_" in name)
        method = LORA
    else:
        name, block = last_block(network, encoder.n_layers)
        for p in block.parameters():
            p.requires_grad_(True)
        targets, method = [name], FALLBACK
    encoder.loaded = dataclasses.replace(encoder.loaded, model=network)
    classifier = Classifier(encoder, network, n_classes)
    classifier.to(classifier.encoder.device)
    return Adapted(classifier, method, targets)


def load_encoder(settings: dict[str, Any], *, device: str, threads: int | None) -> TokenModelEncoder:
    """The registry's encoder for resolved extraction `settings`, through the contract's loading path
    (`geneb.extract.step.build_encoder`; load-time checks run). Raises FineTuneInputError when the family's
    adapter is not a token-level torch network (nothing to fine-tune)."""
    from geneb.extract.step import build_encoder

    encoder = build_encoder(settings, device=device, threads=threads, progress=False)
    if not isinstance(encoder, TokenModelEncoder):
        raise FineTuneInputError(
            f"model {settings.get('model')}: its encoder ({type(encoder).__name__}) is not a token-level torch "
            "network; it cannot be fine-tuned"
        )
    return encoder
