"""From a document position to finished completion text (context -> engine -> post-processing)."""

from .service import CompletionRequest, CompletionService, Suggestion

__all__ = ["CompletionRequest", "CompletionService", "Suggestion"]
