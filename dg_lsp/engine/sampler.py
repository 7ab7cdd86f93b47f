"""Sampling for the denoising loop as pure tensor functions with an explicit generator.

Each function mirrors one piece of transformers' `generation_diffusion_gemma.py`
(LinearTemperatureScheduleLogitsProcessor, EntropyBoundSampler, StableAndConfidentStoppingCriteria)
and draws random numbers in the same order, so the loop can reproduce `model.generate()`.
"""

from __future__ import annotations

import torch


# Greedy decoding (temperature 0) still needs a temperature for the entropy the acceptance (EB-sampler) and the
# stop test read: untempered (1.0) entropies kept every position above the bound and greedy always ran all
# max_steps. Greedy reads them at 0.2, the default sampling temperature's start. The tokens are argmax either way.
GREEDY_ACCEPT_TEMPERATURE = 0.2


def step_temperature(greedy: bool, steps_remaining: int, max_steps: int, t_max: float, t_min: float) -> float:
    """The temperature one denoising step divides its logits by."""
    if greedy:
        return GREEDY_ACCEPT_TEMPERATURE
    return temperature_at(steps_remaining, max_steps, t_max, t_min)


def temperature_at(steps_remaining: int, max_steps: int, t_max: float, t_min: float) -> float:
    """Linear schedule t_max -> t_min; `steps_remaining` counts down from max_steps to 1."""
    return t_min + (t_max - t_min) * (steps_remaining / max_steps)


def noise_tokens(shape: tuple[int, ...], vocab_size: int, generator: torch.Generator | None,
                 device: torch.device, noise_kind: str = "uniform", mask_id: int | None = None) -> torch.LongTensor:
    """Fresh noise: uniform-random vocabulary tokens, or the absorbing mask token."""
    if noise_kind == "mask":
        return torch.full(shape, int(mask_id), dtype=torch.long, device=device)
    return torch.randint(0, vocab_size, shape, generator=generator, device=device)


def sample_tokens(logits: torch.Tensor, generator: torch.Generator | None, greedy: bool,
                  reference: bool = False) -> torch.LongTensor:
    """Draw one token per position from processed logits [B, L, V].

    `reference=True` draws with `torch.multinomial` as `generate()` does (same random numbers, same tokens).
    The default draws from the same distribution by inverting its CDF with one uniform number per
    position: on CPU that is 0.4 ms instead of 8.5 ms for a 48 x 8,192 canvas (a quarter of a decoder step
    of the default model)."""
    if greedy:
        return argmax(logits)
    b, length, vocab = logits.shape
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32).view(-1, vocab)
    if reference:
        drawn = torch.multinomial(probs, num_samples=1, generator=generator)
    else:
        cdf = probs.cumsum(dim=-1)
        u = torch.rand(cdf.shape[0], 1, generator=generator, device=cdf.device) * cdf[:, -1:]
        drawn = torch.searchsorted(cdf, u, right=True).clamp_(max=vocab - 1)
    return drawn.squeeze(-1).view(b, length)


# On x86 CPUs, float32 exp (and arithmetic) with subnormal or underflowing results takes a microcode path 15-100x
# slower than the ordinary one: on this Xeon (AVX-512) 45 ms instead of 0.4 ms for 40 x 32,768 values, and
# log_softmax's own exp slows down the same way. Tempered logits (divided by 0.2) put most of the vocabulary below
# exp's range, so computing the entropy as -(exp(logp) * logp).sum() was 15-20 ms of a 120 ms denoising step of the
# adapted Gemma (docs/results/ar-head-fix.md). Flooring the logits at max - 75 keeps every exp and product in the
# normal range (a row's log-sum-exp exceeds its max by at most log V = 10.4 < 87.3 - 75). A column at or below the
# floor has probability below e^-75 = 2.7e-33 and is left out of the sum, so the entropy changes by less than
# V * e^-75 * (75 + log V), about 8e-27 nats for V = 32k, against bounds of 0.1 and up; the floor changes the
# log-sum-exp by less than V * e^-75 relative, below float32's resolution.
ENTROPY_FLOOR = 75.0


def argmax(logits: torch.Tensor) -> torch.LongTensor:
    """`logits.argmax(dim=-1)`, the same indices (the first of tied maxima, as argmax), through `max`: torch's CPU
    argmax reduction is about 3x slower (one thread, float32: 1.25 against 0.41 ms for 25 x 33,000 logits, 0.41
    against 0.13 ms for one row of the 262,144-column head)."""
    return logits.max(dim=-1).indices


def token_entropy(logits: torch.Tensor, reference: bool = False) -> torch.Tensor:
    """Entropy of each position's distribution: [B, L, V] -> [B, L]. `reference=True` computes it as
    `generate()` does (torch.distributions); the default computes the same quantity from one log-softmax over logits
    floored at the row's max - ENTROPY_FLOOR, scoring only the columns above the floor (see ENTROPY_FLOOR)."""
    if reference:
        return torch.distributions.Categorical(logits=logits).entropy()
    x = logits.float()
    floor = x.amax(dim=-1, keepdim=True) - ENTROPY_FLOOR
    logp = torch.log_softmax(torch.maximum(x, floor), dim=-1)
    return -(logp.exp() * logp * (x > floor)).sum(dim=-1)


def entropy_bound_accept(entropy: torch.Tensor, entropy_bound: float, eligible: torch.BoolTensor) -> torch.BoolTensor:
    """EB-sampler (arXiv 2505.24857): accept the lowest-entropy positions while
    sum(entropy) - max(entropy) <= bound. Ineligible (pinned) positions count as zero entropy."""
    entropy = torch.where(eligible, entropy, torch.zeros_like(entropy))
    sorted_entropy, order = torch.sort(entropy, dim=-1, descending=False)
    cumulative = torch.cumsum(sorted_entropy, dim=-1)
    sorted_accept = cumulative - sorted_entropy <= entropy_bound
    return torch.scatter(torch.zeros_like(sorted_accept), dim=-1, index=order, src=sorted_accept)


def left_to_right_accept(entropy: torch.Tensor, entropy_bound: float, eligible: torch.BoolTensor,
                         settled: torch.BoolTensor) -> torch.BoolTensor:
    """The EB rule in canvas order. `settled`: eligible positions that already hold an accepted token (not noise)
    in this step's input; under this rule they are the hole's leading positions, and they stay accepted (re-drawn
    from this step's logits). Re-drawing is what corrects a guess accepted beyond the frontier: with a nearly causal
    decoder it is a Jacobi iteration whose fixed point is the greedy left-to-right answer. Keeping accepted tokens
    instead was measured and is worse (docs/results/gemma-adaptation.md, seventh session). The open ones are accepted from the left while the entropy summed over the open
    positions before each one is <= bound, so the first open position is always taken, whatever its entropy.
    Ineligible (pinned) positions count as zero entropy."""
    open_ = eligible & ~settled
    entropy = torch.where(open_, entropy, torch.zeros_like(entropy))
    # the sum over the positions strictly before each one, as a shifted running sum: `cumsum - entropy` would lose a
    # small sum beside a large entropy to rounding (1e-8 + 1.03 - 1.03 is 0 in float32) and take a position the
    # rule refuses at a bound of 0
    before = torch.nn.functional.pad(torch.cumsum(entropy, dim=-1)[..., :-1], (1, 0))
    return eligible & (before <= entropy_bound)


def stable_and_confident(history: list[torch.LongTensor], argmax_canvas: torch.LongTensor, entropy: torch.Tensor,
                         hole: torch.BoolTensor, stability_threshold: int, confidence_threshold: float,
                         keep: int = 0) -> torch.BoolTensor:
    """Adaptive stop per row: the argmax canvas equals the last `stability_threshold` ones and the
    mean entropy over hole positions is below the threshold. `history` is updated in place; it keeps the last
    max(stability_threshold, keep) argmax canvases (`keep`: for the caller's own tests)."""
    if stability_threshold == 0:
        stable = torch.ones(argmax_canvas.shape[0], dtype=torch.bool, device=argmax_canvas.device)
        if keep:
            history.append(argmax_canvas)
            del history[:-keep]
    else:
        stable = torch.ones(argmax_canvas.shape[0], dtype=torch.bool, device=argmax_canvas.device)
        if len(history) < stability_threshold:
            stable &= False
        for past in history[-stability_threshold:]:
            stable &= (past == argmax_canvas).all(dim=-1)
        history.append(argmax_canvas)
        del history[:-max(stability_threshold, keep)]
    if bool(hole.all()):
        mean_entropy = entropy.mean(dim=-1)  # bit-identical to the reference when nothing is pinned
    else:
        counts = hole.sum(dim=-1).clamp(min=1)
        mean_entropy = torch.where(hole, entropy, torch.zeros_like(entropy)).sum(dim=-1) / counts
    return stable & (mean_entropy < confidence_threshold)
