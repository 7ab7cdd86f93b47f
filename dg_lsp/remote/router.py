"""Session affinity for Ray Serve: a document's requests go to the replica that holds its prefix KV cache.

The thin client sends each request with the header `serve_multiplexed_model_id: <affinity key>` (a hash of
the client's id and the document, dg_lsp/remote/wire.py); Serve's proxy puts it in the request's routing
metadata. This router ranks the replicas by rendezvous hashing of that key: the document's own replica first,
the others after it, so a replica that is full (at `max_ongoing_requests`) or gone hands the document to the
next in a fixed order, and a replica that joins or dies moves only the documents that hash to it. A request
without a key (status, health) may go to any replica.

Each routing task answers exactly its own request (no FIFOMixin: FIFO routing lets a task chosen for one
document's replica fulfil another document's request, which would break affinity under load).
"""

from __future__ import annotations

from ray.serve.request_router import RequestRouter

from .wire import rank_replicas


class DocumentAffinityRouter(RequestRouter):
    async def choose_replicas(self, candidate_replicas, pending_request=None):
        if not candidate_replicas:
            return []
        key = pending_request.metadata.multiplexed_model_id if pending_request is not None else ""
        if not key:
            return [list(candidate_replicas)]
        by_id = {r.replica_id.unique_id: r for r in candidate_replicas}
        order = [by_id[rid] for rid in rank_replicas(key, list(by_id))]
        return [order[:1], order[1:]] if len(order) > 1 else [order]
