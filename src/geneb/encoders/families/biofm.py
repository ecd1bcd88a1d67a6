"""BioFM (m42-health/BioFM-265M): a transformers Mistral decoder over BioToken ids, served by GENEB's transformers
path (`geneb.encoders.families.hf.HFEncoder`) with GENEB's own BioToken tokenizer.

What the checkpoint is (read, not copied, from the public code; docs/adapters/biofm.md has the detail):

* The model: biofm-eval's `AnnotatedModel` is `MistralForCausalLM` with nothing added
  (github m42-health/biofm-eval@30d5ec201b4efef7a0014a3cf5e7436f41f7f6b9, biofm_eval/models/base.py), and the hub
  config names `MistralForCausalLM`, model_type `mistral`, with no `auto_map`: no remote code. `AutoModel` builds
  the `MistralModel` trunk; its `last_hidden_state` (after the final RMSNorm) is the reference's
  `output.hidden_states[-1]` (biofm_eval/embedder.py `Embedder._get_sequence_embeddings`).
* The tokenizer: biofm-eval's `AnnotationTokenizer` (biofm_eval/tokenizers/base.py) is not a transformers tokenizer
  a checkpoint can name, and the package is not on PyPI, so GENEB implements its rules here (`BioTokenTokenizer`):
  the checkpoint's `tokenizer_config.json` gives `char_ords` (the characters, ids 0-5 in file order) and
  `model_max_length`; `[CLS]` 6, `[SEP]` 7, `[UNK]` 8, `[PAD]` 9, `[EOS]` 10, `[BOS]` 11, `[SPECIAL]` 12 are fixed in
  the code, then the variant characters `ÂṰĜĈ` (13-16) and the seven annotation tokens (17-23). The Embedder
  spaces a plain sequence out (`" ".join(s)`) and the tokenizer splits on whitespace, so each letter is one token,
  a letter outside the characters is `[UNK]`, and `build_inputs_with_special_tokens` gives `[CLS] ... [SEP]`.
* The pooled position: the reference takes row `(input_ids != pad).sum(1) - 2` of the last hidden state, i.e.
  the token before `[SEP]`, the last nucleotide. Its tokenizer pads on the left and the Embedder drops the
  attention mask, so in a batch of mixed lengths a shorter row's index lands on a pad or an earlier token, and
  its real tokens attend to the pads (models.tsv reference_extractor_notes). GENEB pads on the right, passes the
  mask and pools `last` with `exclude_special_tokens` (the engine's `pool`): every row's own last nucleotide,
  the value the reference gives a row embedded alone.
"""

from __future__ import annotations

from typing import Any

from geneb.core.errors import ModelLoadError
from geneb.encoders.families.hf import HFEncoder, read_config_json
from geneb.registry.spec import ExtractionSettings

#: the file the characters and the length cap are read from (AnnotationTokenizer.from_pretrained on a folder)
_TOKENIZER_FILE = "tokenizer_config.json"
#: how many characters the fixed ids leave room for: characters are numbered from 0 and `[CLS]` is fixed at 6
_N_CHARACTERS = 6
#: special tokens at the ids AnnotationTokenizer.__init__ fixes (biofm_eval/tokenizers/base.py @ 30d5ec2)
_SPECIAL_IDS = {"[CLS]": 6, "[SEP]": 7, "[UNK]": 8, "[PAD]": 9, "[EOS]": 10, "[BOS]": 11, "[SPECIAL]": 12}
#: variant characters, ids 13.. (AnnotationTokenizer.from_config passes list("ÂṰĜĈ"))
_VARIANT_CHARACTERS = ("Â", "Ṱ", "Ĝ", "Ĉ")
#: annotation tokens, numbered after the variant characters (ANNOTATION_TOKENS of tokenizers/base.py)
_ANNOTATION_TOKENS = (
    "[START_CDS]",
    "[END_CDS]",
    "[START_TRANSCRIPT]",
    "[END_TRANSCRIPT]",
    "[START_EXON]",
    "[END_EXON]",
    "[START_CODON]",
)


class BioTokenTokenizer:
    """GENEB's implementation of biofm-eval's AnnotationTokenizer for plain DNA (no annotation or variant input).

    characters: the checkpoint's characters in `char_ords` order (ids 0..5). model_max_length: its length cap in
    tokens, special tokens included (6144 for BioFM-265M). `padding_side` records the package's default, "left",
    which GENEB never uses (it pads on the right itself). Raises ModelLoadError naming `model` for a character list
    that does not fit the fixed ids (not exactly 6 distinct single characters, or one that is whitespace or a
    special, variant or annotation token): with more, characters share ids with `[CLS]`..; with fewer, the
    package's annotation ids shift onto the variant ones (5 characters put `[START_CDS]` at 16, `Ĉ`'s id).
    """

    padding_side = "left"
    is_fast = False

    def __init__(self, characters: list[str], model_max_length: int, *, model: str, source: str = _TOKENIZER_FILE):
        self.model = model
        fixed = set(_SPECIAL_IDS) | set(_VARIANT_CHARACTERS) | set(_ANNOTATION_TOKENS)
        bad = [c for c in characters if len(c) != 1 or c.isspace() or c in fixed]
        if len(characters) != _N_CHARACTERS or len(set(characters)) != _N_CHARACTERS or bad:
            raise ModelLoadError(
                f"model {model}: {source} char_ords give the characters {characters!r}; the BioToken layout needs "
                f"exactly {_N_CHARACTERS} distinct single non-space characters (ids 0-5 before [CLS] 6)"
                + (f"; not allowed: {bad!r}" if bad else "")
            )
        if isinstance(model_max_length, bool) or not isinstance(model_max_length, int) or model_max_length < 3:
            raise ModelLoadError(
                f"model {model}: {source} model_max_length must be an integer of at least 3 tokens, "
                f"got {model_max_length!r}"
            )
        vocab = {ch: i for i, ch in enumerate(characters)}
        vocab.update(_SPECIAL_IDS)
        vocab.update({ch: 13 + i for i, ch in enumerate(_VARIANT_CHARACTERS)})
        vocab.update(
            {
                tok: len(_SPECIAL_IDS) + _N_CHARACTERS + len(_VARIANT_CHARACTERS) + i
                for i, tok in enumerate(_ANNOTATION_TOKENS)
            }
        )
        self.characters = list(characters)
        self.vocab = vocab
        self.id_to_token = {i: t for t, i in vocab.items()}
        self.model_max_length = int(model_max_length)
        self.cls_token_id = _SPECIAL_IDS["[CLS]"]
        self.sep_token_id = _SPECIAL_IDS["[SEP]"]
        self.unk_token_id = _SPECIAL_IDS["[UNK]"]
        self.pad_token_id = _SPECIAL_IDS["[PAD]"]

    @classmethod
    def from_checkpoint(cls, where: str, revision: str | None, *, model: str) -> BioTokenTokenizer:
        """Read `tokenizer_config.json` of a local folder or a hub snapshot at `revision` (`char_ords`,
        `model_max_length`; other keys are ignored, as AnnotationTokenizer.from_config ignores them). Raises
        ModelLoadError naming the model and the file when the file is missing or a key is absent or malformed."""
        try:
            raw = read_config_json(where, revision, _TOKENIZER_FILE, required=False)
        except ValueError as err:  # json.JSONDecodeError
            raise ModelLoadError(f"model {model}: {_TOKENIZER_FILE} of {where} is not valid JSON ({err})") from err
        if not raw:
            raise ModelLoadError(
                f"model {model}: {where} has no {_TOKENIZER_FILE} (or an empty one); the BioToken tokenizer reads its "
                "characters (char_ords) and length cap (model_max_length) from it"
            )
        source = f"{_TOKENIZER_FILE} of {where}"
        missing = [k for k in ("char_ords", "model_max_length") if k not in raw]
        if missing:
            raise ModelLoadError(f"model {model}: {source} lacks {missing} (keys found: {sorted(raw)})")
        ords = raw["char_ords"]
        if not isinstance(ords, list) or not all(isinstance(o, int) and not isinstance(o, bool) for o in ords):
            raise ModelLoadError(f"model {model}: {source} char_ords must be a list of integers, got {ords!r}")
        try:
            characters = [chr(o) for o in ords]
        except (ValueError, OverflowError) as err:
            raise ModelLoadError(
                f"model {model}: {source} char_ords {ords!r} holds a value that is no character"
            ) from err
        return cls(characters, raw["model_max_length"], model=model, source=source)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Token ids of one plain sequence without special tokens: one id per letter, `[UNK]` (8) for a letter
        outside the characters; whitespace gives no token (the package splits the spaced-out text on it)."""
        vocab, unk = self.vocab, self.unk_token_id
        return [vocab.get(ch, unk) for ch in text if not ch.isspace()]

    def __call__(self, texts: str | list[str], *, add_special_tokens: bool = True, **_ignored: Any) -> dict[str, Any]:
        """{"input_ids": ids} for one text or a list, with `[CLS] ... [SEP]` when `add_special_tokens` (the package's
        build_inputs_with_special_tokens). Padding and truncation options are ignored: GENEB pads and cuts itself."""
        one = isinstance(texts, str)
        ids = [self.encode(t) for t in ([texts] if isinstance(texts, str) else texts)]
        if add_special_tokens:
            ids = [[self.cls_token_id, *row, self.sep_token_id] for row in ids]
        return {"input_ids": ids[0] if one else ids}

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        """The token text of each id; raises ModelLoadError naming the model for an id outside the 24 tokens."""
        try:
            return [self.id_to_token[int(i)] for i in ids]
        except KeyError as err:
            raise ModelLoadError(
                f"model {self.model}: token id {err.args[0]} is not a BioToken id (0-{len(self) - 1})"
            ) from err


class BioFMEncoder(HFEncoder):
    """BioFM behind the shared engine: `HFEncoder` loading (no remote code; `AutoModel` -> `MistralModel`,
    checkpoint heads such as `lm_head.` logged), GENEB's `BioTokenTokenizer`, and the family's causal defaults
    (right padding with the attention mask; registry family `biofm`). Raises what HFEncoder raises, and
    ModelLoadError for a missing or malformed tokenizer_config.json."""

    def _load_tokenizer(self, kwargs: dict[str, Any]) -> BioTokenTokenizer:
        return BioTokenTokenizer.from_checkpoint(self.where, self.revision, model=self.model_id)

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        encoded = [self.tokenizer.encode(t) for t in texts]
        # one token per character: the character spans are exact, so the dropped-letter check sees every letter
        self._offsets = [[(i, i + 1) for i, ch in enumerate(t) if not ch.isspace()] for t in texts]
        return encoded


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> BioFMEncoder:
    """Adapter entry point (see geneb.registry.families)."""
    return BioFMEncoder(settings, **kwargs)
