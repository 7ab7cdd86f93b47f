"""Build DiffusionGemma-architecture models and byte-level BPE tokenizers from scratch.

Used by the training script (the embedded default model) and by tests, which build a
tiny randomly initialised model on the fly and load it through the same `--model DIR`
path a user takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<mask>"]  # ids 0..3, in this order
PAD_ID, EOS_ID, BOS_ID, MASK_ID = 0, 1, 2, 3


def train_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: str | Path) -> None:
    """Train a byte-level BPE on `texts` and save it so `AutoTokenizer.from_pretrained` loads it offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        mask_token="<mask>",
    )
    fast.save_pretrained(str(out_dir))


def make_config(
    vocab_size: int,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    head_dim: int = 32,
    intermediate_size: int = 128,
    num_experts: int = 4,
    top_k_experts: int = 2,
    moe_intermediate_size: int = 64,
    canvas_length: int = 32,
    sliding_window: int = 512,
    max_position_embeddings: int = 8192,
):
    """A scaled-down DiffusionGemmaConfig: Gemma-4 MoE text part plus the smallest vision tower."""
    from transformers import DiffusionGemmaConfig

    # Alternate sliding/full like the real model; the last layer must be full attention.
    layer_types = ["sliding_attention" if (i % 2 == 0 and i != num_layers - 1) else "full_attention"
                   for i in range(num_layers)]
    text = dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=head_dim,
        global_head_dim=head_dim,
        num_experts=num_experts,
        top_k_experts=top_k_experts,
        moe_intermediate_size=moe_intermediate_size,
        layer_types=layer_types,
        sliding_window=sliding_window,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=PAD_ID,
        eos_token_id=EOS_ID,
        bos_token_id=BOS_ID,
    )
    vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=8)
    # Image token ids are never produced by a text-only tokenizer; park them at the top of the vocabulary.
    return DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=canvas_length,
                                boi_token_id=vocab_size - 3, eoi_token_id=vocab_size - 2,
                                image_token_id=vocab_size - 1)


TINY_CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "for i in range(10):\n    print(i)\n",
    "function add(a, b) {\n  return a + b;\n}\n",
    "fn main() {\n    println!(\"hello\");\n}\n",
    "func main() {\n\tfmt.Println(\"hi\")\n}\n",
    "int main(void) {\n    return 0;\n}\n",
    "public class A {\n    public static void main(String[] args) {}\n}\n",
    "import os\nimport sys\n\nif __name__ == '__main__':\n    sys.exit(main())\n",
    "x = [1, 2, 3]\ny = {'a': 1, 'b': 2}\nprint(len(x), y['a'])\n",
]


def build_tiny_model(out_dir: str | Path, seed: int = 0, vocab_size: int = 384, canvas_length: int = 16,
                     noise_kind: str = "uniform", pad_fill: bool = True) -> Path:
    """A randomly initialised DiffusionGemma (about 0.5M parameters) plus tokenizer, saved to `out_dir`."""
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion

    from .spec import InfillSpec

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(TINY_CORPUS * 4, vocab_size, out)
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(make_config(vocab_size, canvas_length=canvas_length)).eval()
    model.save_pretrained(str(out))
    InfillSpec(noise_kind=noise_kind, mask_token_id=MASK_ID if noise_kind == "mask" else None,
               pad_fill=pad_fill, suffix_head_tokens=4).save(out)
    return out
