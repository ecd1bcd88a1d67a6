"""A user's own DNA model, as the `python` family meets it: a 3-layer dilated 1D CNN in plain PyTorch.

Not GENEB code: what a researcher writes. `build(options)` is the factory a registry entry names
(`load: {entry: "dilated_cnn.py:build", options: {...}}`); it returns an object with `embed(list[str]) -> (n, d)`
float32 array and `max_length`. The weights come from a state dict (`options["weights"]`, a file written by
`torch.save(module.state_dict(), path)`) or, without one, from `torch.manual_seed(options["seed"])`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

ALPHABET = "ACGTN"
_CODE = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate(ALPHABET):
    _CODE[ord(_b)] = _i


class DilatedCNN(nn.Module):
    """One-hot (5 channels: A C G T N) -> 3 dilated conv layers (dilation 1, 2, 4; 'same' padding, ReLU) -> the
    mean over positions: a (channels,) vector per sequence. channels 160: 467,840 parameters."""

    def __init__(self, channels: int = 160, kernel: int = 9) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Conv1d(c_in, channels, kernel, dilation=d, padding=d * (kernel - 1) // 2)
            for c_in, d in ((5, 1), (channels, 2), (channels, 4))
        )

    def forward(self, onehot: torch.Tensor) -> torch.Tensor:
        """onehot (B, 5, L) float32 -> (B, channels) mean over the L positions."""
        x = onehot
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x.mean(dim=2)


class CNNEncoder:
    """What the factory returns: embeds each sequence on its own (no padding, so batch mates cannot matter)."""

    def __init__(self, module: DilatedCNN, max_length: int | None, threads: int | None) -> None:
        self.module = module.eval()
        self.max_length = max_length
        self.device = "cpu"
        self.threads = threads

    def embed(self, sequences: list[str]) -> np.ndarray:
        """(n, channels) float32, one row per sequence, in order."""
        if self.threads:
            torch.set_num_threads(self.threads)  # one thread: the same float sums in every process
        out = []
        with torch.no_grad():
            for seq in sequences:
                codes = torch.from_numpy(_CODE[np.frombuffer(seq.upper().encode("ascii"), dtype=np.uint8)])
                onehot = nn.functional.one_hot(codes, 5).T.unsqueeze(0).float()
                out.append(self.module(onehot)[0].numpy())
        return np.stack(out).astype(np.float32)


def build(options: dict) -> CNNEncoder:
    """The factory: options channels (160), kernel (9), seed (0), weights (a state-dict file, optional),
    max_length (nucleotides, optional), threads (torch threads while embedding, optional)."""
    torch.manual_seed(int(options.get("seed", 0)))
    module = DilatedCNN(int(options.get("channels", 160)), int(options.get("kernel", 9)))
    if options.get("weights"):
        module.load_state_dict(torch.load(options["weights"], weights_only=True))
    return CNNEncoder(module, options.get("max_length"), options.get("threads"))
