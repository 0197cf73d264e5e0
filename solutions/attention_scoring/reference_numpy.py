"""Float64 NumPy reference for attention_scoring: the ground truth every check compares with.

Weights follow nn.Linear's convention: a (out_features, in_features) matrix applied as ``x @ W.T``. The functions the
checks call are ``@substitutable``: solutions/attention_scoring/variants.py stands known-wrong versions in for them.
"""

from __future__ import annotations

import numpy as np

from grader.check import substitutable

MASK_VALUE = -1e6  # as the textbook: exp(-1e6 - max) is exactly 0 in float32 and float64


def softmax(X: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = X - X.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


@substitutable
def masked_softmax(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    """Softmax over the last axis of X (batch, queries, keys), keys at or past valid_lens weighted 0.

    valid_lens: None, (batch,) for every query of an example, or (batch, queries) per query.
    """
    X = np.asarray(X, dtype=np.float64)
    if valid_lens is None:
        return softmax(X)
    _, queries, keys = X.shape
    valid = np.asarray(valid_lens)
    if valid.ndim == 1:
        valid = np.repeat(valid[:, None], queries, axis=1)
    mask = np.arange(keys)[None, None, :] < valid[:, :, None]
    return softmax(np.where(mask, X, MASK_VALUE))


@substitutable
def additive_attention(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
                       W_q: np.ndarray, W_k: np.ndarray, w_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a(q, k) = w_v^T tanh(W_q q + W_k k); returns (output, attention weights)."""
    q = np.asarray(queries, np.float64) @ W_q.T  # (batch, queries, hiddens)
    k = np.asarray(keys, np.float64) @ W_k.T  # (batch, keys, hiddens)
    features = np.tanh(q[:, :, None, :] + k[:, None, :, :])
    scores = (features @ w_v.T)[..., 0]
    weights = masked_softmax(scores, valid_lens)
    return weights @ np.asarray(values, np.float64), weights


@substitutable
def dot_product_attention(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                          valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q K^T / sqrt(d)) V; returns (output, attention weights)."""
    queries = np.asarray(queries, np.float64)
    scores = queries @ np.asarray(keys, np.float64).transpose(0, 2, 1) / np.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, valid_lens)
    return weights @ np.asarray(values, np.float64), weights


@substitutable
def bilinear_attention(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
                       W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a(q, k) = q^T W k with W (query_size, key_size), unscaled; returns (output, attention weights)."""
    scores = np.asarray(queries, np.float64) @ W @ np.asarray(keys, np.float64).transpose(0, 2, 1)
    weights = masked_softmax(scores, valid_lens)
    return weights @ np.asarray(values, np.float64), weights
