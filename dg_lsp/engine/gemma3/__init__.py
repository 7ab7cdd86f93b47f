"""A pretrained Gemma 3 run as a block-diffusion infill model: the base model as encoder, the same weights plus
a LoRA adapter as the bidirectional decoder (adapter.py), a restricted output vocabulary (vocab.py)."""
