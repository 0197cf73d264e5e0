"""Float64 NumPy reference for keras_additive_attention: exactly what keras.layers.AdditiveAttention computes.

scores[b, i, j] = sum_d scale[d] * tanh(query[b, i, d] + key[b, j, d]); masked scores (value_mask False, or j > i
when causal) have 1e9 subtracted; a softmax over the keys; output = weights @ value, zeroed where query_mask is
False. tests/test_keras_additive_attention.py checks this against Keras itself.
"""

from __future__ import annotations

import numpy as np

from grader.check import substitutable

MASK_PENALTY = 1.0e9


def softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def score_mask(batch: int, tq: int, tv: int, value_mask: np.ndarray | None, causal: bool) -> np.ndarray | None:
    """Where a query may attend a key: (batch, Tq, Tv) booleans, or None when nothing is masked."""
    mask = None
    if causal:
        mask = np.broadcast_to(np.tril(np.ones((tq, tv), dtype=bool)), (batch, tq, tv))
    if value_mask is not None:
        allowed = np.broadcast_to(value_mask.astype(bool)[:, None, :], (batch, tq, tv))
        mask = allowed if mask is None else mask & allowed
    return mask


@substitutable
def additive_attention(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                       scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                       value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(output (batch, Tq, dim), distribution (batch, Tq, Tv)) in eval mode (no dropout)."""
    key = value if key is None else key
    features = np.tanh(query[:, :, None, :] + key[:, None, :, :])
    if scale is not None:
        features = features * scale
    scores = features.sum(axis=-1)
    mask = score_mask(query.shape[0], query.shape[1], key.shape[1], value_mask, causal)
    if mask is not None:
        scores = np.where(mask, scores, scores - MASK_PENALTY)
    weights = softmax(scores)
    output = weights @ value
    if query_mask is not None:
        output = np.where(query_mask.astype(bool)[..., None], output, 0.0)
    return output, weights
