"""What a memory server's model calls cost: list prices of common OpenAI models, in USD
per million tokens (input, output), as OpenAI published them (standard tier, no batch or
cache discount) when this table was written (2025-06; the GPT-5 family as published at its
release, 2025-08: mem0's default extraction model is `gpt-5-mini`). A price changes; the table is
swecl's and named in docs/design.md (`memory.model.called.cost_usd`), so a recorded cost
says which prices it used: the model as the request named it, this table.

A model is found by its exact name, else by the longest listed name it extends with a
dated or tagged suffix (`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`), after an
`openai/` provider prefix is dropped. A model the table does not list has no cost (None):
a guess, or $0, would make a total look known when it is not.
"""

from __future__ import annotations

__all__ = ["MODEL_PRICES", "model_cost", "price_of"]

# model -> (USD per 1M input tokens, USD per 1M output tokens); embeddings bill input only.
MODEL_PRICES: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}


def price_of(model: str | None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens of `model`, or None: not in the table."""
    if not model:
        return None
    name = model.strip().lower().removeprefix("openai/")
    if name in MODEL_PRICES:
        return MODEL_PRICES[name]
    # A dated or tagged variant of a listed model: the longest listed name it extends.
    found = [m for m in MODEL_PRICES if name.startswith(m + "-")]
    return MODEL_PRICES[max(found, key=len)] if found else None


def model_cost(model: str | None, tokens_in: int | None, tokens_out: int | None) -> float | None:
    """A call's cost in USD; None when the model is not listed or no usage was reported."""
    price = price_of(model)
    if price is None or (tokens_in is None and tokens_out is None):
        return None
    return round(((tokens_in or 0) * price[0] + (tokens_out or 0) * price[1]) / 1e6, 9)
