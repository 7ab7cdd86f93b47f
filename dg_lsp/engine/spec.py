"""How a model directory wants infill canvases built: the `dg_lsp.json` beside the weights.

`transformers`' DiffusionGemmaGenerationConfig rejects unknown keys, so the settings that
only dg-lsp reads (noise kind, mask token, pad-fill training, suffix-head size) live in a
file of their own. A real DiffusionGemma checkpoint has no such file and gets the defaults:
uniform noise, no pad-fill (so the engine searches over hole lengths).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

SPEC_FILE = "dg_lsp.json"
NOISE_KINDS = ("uniform", "mask")
UNMASK_ORDERS = ("entropy", "left_to_right")


@dataclass(frozen=True)
class InfillSpec:
    """Canvas conventions a model was trained with."""

    noise_kind: str = "uniform"  # "uniform": random vocabulary tokens; "mask": an absorbing [MASK] token
    mask_token_id: int | None = None
    pad_fill: bool = False  # trained to fill the unused tail of a hole with the pad token
    suffix_head_tokens: int = 16  # at most this many suffix tokens are pinned in the canvas
    # Encoder prompt = [bos] + prefix. Models trained with a marked far suffix would set these.
    add_bos: bool = True
    # Longest encoder prompt the model was trained on; requests asking for more are capped to it.
    max_prompt_tokens: int | None = None
    # The autoregressive shift (Dream, DiffuLLaMA): the canvas starts with the prompt's last token, pinned, and
    # the model's row j predicts position j+1 (its runner realigns the logits). The engine moves that token.
    ar_shift: bool = False
    # Which hole positions a denoising step accepts (engine/sampler.py). "entropy": the lowest-entropy ones anywhere
    # in the hole (EB-sampler, as DiffusionGemma). "left_to_right": the leftmost still-open ones, as many as the same
    # entropy bound allows and at least one, so a model whose decoder starts causal (the Gemma adapter's closed
    # canvas gate) always extends a clean prefix and never commits a far token predicted from masks.
    unmask_order: str = "entropy"

    def __post_init__(self) -> None:
        if self.unmask_order not in UNMASK_ORDERS:
            raise ValueError(f"unmask_order must be one of {UNMASK_ORDERS}, got {self.unmask_order!r}")
        if self.unmask_order == "left_to_right" and self.noise_kind != "mask":
            raise ValueError("unmask_order 'left_to_right' needs noise_kind 'mask' (it tells accepted from open "
                             "positions by the [MASK] token)")
        if self.noise_kind not in NOISE_KINDS:
            raise ValueError(f"noise_kind must be one of {NOISE_KINDS}, got {self.noise_kind!r}")
        if self.noise_kind == "mask" and self.mask_token_id is None:
            raise ValueError("noise_kind 'mask' needs mask_token_id")

    @classmethod
    def load(cls, model_dir: str | Path) -> "InfillSpec":
        path = Path(model_dir) / SPEC_FILE
        if not path.is_file():
            return cls()
        raw = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    def save(self, model_dir: str | Path) -> None:
        path = Path(model_dir) / SPEC_FILE
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
