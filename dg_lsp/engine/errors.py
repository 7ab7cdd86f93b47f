"""The engine's one error the user must act on. It lives apart from the loader so that modules the
loader uses (the quantization options) can raise it without importing the loader back."""


class ModelLoadError(RuntimeError):
    """The model could not be loaded; the message says why and what to do."""
