"""Tokens used and what they cost.

Costs are computed only from prices the user configured (``AgentConfig.prices``, US dollars per
million tokens); with no price for the model the cost is unknown, never guessed. Where a server
reports no usage, tokens are estimated at 4 characters per token (OpenAI's rule of thumb for
English text, "What are tokens and how to count them", OpenAI Help Center) and marked as
estimated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from cudalens.agent.config import ModelPrice

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Usage:
    """Tokens of one request (or a sum of requests). ``estimated``: at least one count was
    estimated from characters because the server reported none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.estimated or other.estimated)


def estimate_tokens(texts: Iterable[str]) -> int:
    """Tokens of ``texts`` at ``CHARS_PER_TOKEN`` characters per token, rounded up."""
    chars = sum(len(t) for t in texts)
    return -(-chars // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Cost:
    """The cost estimate: ``usd`` None when unknown, ``note`` says how it was made or why not."""

    usd: Optional[float]
    note: str


def cost_of(usage: Usage, model: Optional[str], price: Optional[ModelPrice],
            price_origin: str = "the configuration") -> Cost:
    """``usage`` priced with ``price`` (per million tokens)."""
    if price is None:
        return Cost(None, f"cost unknown: no price for model {model!r} is configured "
                          f"(set [agent.prices.\"{model}\"] input_per_mtok and output_per_mtok)")
    usd = (usage.prompt_tokens * price.input_per_mtok
           + usage.completion_tokens * price.output_per_mtok) / 1e6
    approx = ", tokens partly estimated" if usage.estimated else ""
    return Cost(usd, f"${price.input_per_mtok:g} / ${price.output_per_mtok:g} per million prompt / "
                     f"completion tokens, from {price_origin}{approx}")


class Ledger:
    """Adds up the usage of every request of one session."""

    def __init__(self) -> None:
        self.total = Usage()
        self.requests = 0

    def add(self, usage: Usage) -> None:
        self.total = self.total + usage
        self.requests += 1

    def over(self, budget: Optional[int]) -> bool:
        return budget is not None and self.total.total_tokens >= budget
