"""From a document position to finished completion text (context -> engine -> post-processing)."""

from .service import Completion, CompletionRequest, CompletionService

__all__ = ["Completion", "CompletionRequest", "CompletionService"]
