"""Shared fixtures of the extraction tests (tests/encoders, tests/extract, tests/registry, tests/cases): a zoo of tiny
random-init checkpoints of every family, built once per session with save_pretrained and loaded through the
real registry and adapters, and a factory of prepared task folders (the stage-1 layout extract_task reads).

tests/conftest.py imports the fixtures from here, so every test module sees them.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from geneb.core.ipc import send, server_dir
from geneb.extract.server import connect
from geneb.registry.load import extraction_settings

#: zoo kind -> (GENEB family, registry extraction defaults, trust_remote_code, load section)
KINDS: dict[str, tuple[str, dict[str, Any], bool, dict[str, Any]]] = {
    "esm": ("hf-encoder", {"max_tokens": 1000}, False, {}),
    "bert": ("hf-encoder", {"max_tokens": 64}, False, {}),
    "modernbert": ("hf-encoder", {"max_tokens": 64}, False, {}),
    "bigbird": ("hf-encoder", {"max_tokens": 1024}, False, {}),
    "llama": ("hf-decoder", {"max_tokens": 64}, False, {}),
    "mistral": ("hf-decoder", {"max_tokens": 64}, False, {}),
    "mixtral": ("hf-decoder", {"max_tokens": 64}, False, {}),
    "gpt-neox": ("hf-decoder", {"max_tokens": 64}, False, {}),
    "mamba": ("hf-ssm", {"max_tokens": 64}, False, {}),
    "hyena": ("hyena", {"max_tokens": 1024}, True, {"transformers": ">=4.26"}),
    "mosaic": ("hf-encoder", {"max_tokens": 512}, True, {"transformers": ">=4.26", "hide_modules_on_cpu": ["triton"]}),
    "mistral-dna": ("hf-decoder", {"max_tokens": 256, "exclude_special_tokens": False}, False, {}),
}
ENCODERS = ("esm", "bert", "modernbert", "bigbird", "mosaic")
DECODERS = ("llama", "mistral", "mixtral", "gpt-neox", "mamba", "hyena")


def spec(
    path: str | Path,
    family: str,
    extraction: dict[str, Any] | None = None,
    *,
    trust: bool = False,
    load: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A minimal registry entry for a local checkpoint folder."""
    entry: dict[str, Any] = {
        "display": Path(path).name,
        "family": family,
        "source": {"kind": "local", "path": str(path)},
        "architecture_family": "test",
        "tokenizer_type": "test",
        "params": 0,
        "pretraining_domain": "none",
        "license": "test",
        "extraction": dict(extraction or {}),
        "trust_remote_code": trust,
    }
    if load:
        entry["load"] = load
    return entry


class Zoo:
    """Tiny checkpoints by kind, built on first use; settings and encoders through the real registry code."""

    def __init__(self, root: Path, shared: Path) -> None:
        self.root = root
        self.shared = shared
        self._folders: dict[str, Path] = {}
        self._encoders: dict[str, Any] = {}

    def folder(self, kind: str) -> Path:
        import tiny_models as tiny

        if kind not in self._folders:
            tok = self.shared / "models" / "tokenizers"
            # remote code is cached by folder name (HF_MODULES_CACHE/transformers_modules/<name>): a unique name
            # keeps concurrent test sessions from sharing one cached module
            target = self.root / (f"{kind}-{uuid.uuid4().hex[:12]}" if kind in ("hyena", "mosaic") else kind)
            if kind == "hyena":
                tiny.write_remote_hyena(target)
            elif kind == "mosaic":
                tiny.write_remote_mosaic(target, tok / "dnabert-2-117m")
            elif kind == "mistral-dna":
                target = self.shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom"
            else:
                tiny.build_tiny(
                    kind,
                    target,
                    tokenizer_dir=tok / ("gena-lm-bigbird-base-t2t" if kind == "bigbird" else "dnabert-2-117m"),
                )
            self._folders[kind] = target
        return self._folders[kind]

    def registry(self, kind: str, name: str | None = None, **extraction: Any) -> dict[str, Any]:
        family, defaults, trust, load = KINDS[kind]
        name = name or f"tiny-{kind}"
        return {"models": {name: spec(self.folder(kind), family, {**defaults, **extraction}, trust=trust, load=load)}}

    def settings(self, kind: str, **extraction: Any) -> dict[str, Any]:
        return extraction_settings(self.registry(kind, **extraction), f"tiny-{kind}", {})

    def encoder(self, kind: str, *, batch_size: int = 4, batch_tokens: int | None = None, **extraction: Any) -> Any:
        """A built encoder (cached per kind and extraction settings; batch_size and batch_tokens are reset on
        every call)."""
        from geneb.extract.step import build_encoder

        key = json.dumps([kind, extraction], sort_keys=True)
        if key not in self._encoders:
            self._encoders[key] = build_encoder(
                self.settings(kind, **extraction), batch_size=batch_size, progress=False
            )
        enc = self._encoders[key]
        enc.batch_size = batch_size
        enc.batch_tokens = batch_tokens
        return enc


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Zoo:
    """The session's tiny-model zoo."""
    return Zoo(tmp_path_factory.mktemp("zoo"), shared)


def random_dna(n: int, seed: int) -> str:
    """A random ACGT string of length n (numpy default_rng(seed))."""
    return "".join(np.random.default_rng(seed).choice(list("ACGT"), n))


def write_task(folder: Path, task: str, train: list[str], test: list[str]) -> Path:
    """A prepared task folder (train/test parquet with row, sequence, label; card.json with task and data_hash)."""
    folder.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    for split, seqs in (("train", train), ("test", test)):
        df = pd.DataFrame(
            {
                "row": np.arange(len(seqs), dtype=np.int64),
                "sequence": seqs,
                "label": np.arange(len(seqs), dtype=np.int64) % 2,
            }
        )
        df.to_parquet(folder / f"{split}.parquet", index=False)
        h.update(json.dumps(seqs).encode())
    (folder / "card.json").write_text(json.dumps({"task": task, "category": "test", "data_hash": h.hexdigest()[:12]}))
    return folder


@pytest.fixture
def make_task(tmp_path: Path):
    """make_task(train, test, task="t") -> a prepared task folder under tmp_path."""

    def make(train: list[str], test: list[str], task: str = "t") -> Path:
        return write_task(tmp_path / "tasks" / task, task, train, test)

    return make


def stop_servers(folder: str | Path | None = None) -> int:
    """Ask every model server with a socket in `folder` (default: `server_dir()`) to stop now, instead of at
    its idle timeout; returns how many were asked. A server busy with a task stops after it."""
    asked = 0
    for sock in sorted(Path(folder or server_dir()).glob("*.sock")):
        conn = connect(sock)
        if conn is None:
            continue
        with conn:
            send(conn, {"op": "stop"})
        asked += 1
    return asked
