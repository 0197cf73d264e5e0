"""Float64 NumPy references for practical10: attention by hand (Question 1) and dot-product attention (Question 2)."""

from __future__ import annotations

import numpy as np

from grader.check import substitutable


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


@substitutable
def scaled_dot_product_attention(q: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = softmax(X q / sqrt(d)) over the n positions of X (n, d); z = X^T p."""
    p = softmax(X @ q / np.sqrt(X.shape[1]))
    return p, X.T @ p


@substitutable
def self_attention(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray,
                   W_V: np.ndarray) -> tuple[np.ndarray, ...]:
    """Q, K, V, the (n, n) attention map A = softmax(Q K^T / sqrt(d_k)) row by row, and Z = A V."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ K.T / np.sqrt(K.shape[1]))
    return Q, K, V, A, A @ V


@substitutable
def multi_head_attention(X: np.ndarray, heads: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                         W_O: np.ndarray) -> np.ndarray:
    """Each head's Z side by side (along features), then W_O."""
    return np.concatenate([self_attention(X, *head)[4] for head in heads], axis=1) @ W_O


@substitutable
def dot_prod_attention(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
                       W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """query (batch, T, H) decoder states s_t, context (batch, S, H) encoder states h_s, mask (batch, S) True for
    real tokens; W_c (H, 2H) as nn.Linear stores it. Returns tanh(W_c [c_t; s_t]) (batch, T, H) and a (batch, T, S)."""
    scores = query @ context.transpose(0, 2, 1)
    if mask is not None:
        scores = np.where(mask[:, None, :], scores, -np.inf)
    weights = softmax(scores)
    contexts = weights @ context
    return np.tanh(np.concatenate([contexts, query], axis=-1) @ W_c.T), weights
