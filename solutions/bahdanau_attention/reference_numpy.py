"""Float64 NumPy reference for bahdanau_attention: additive attention of one query against n keys, multi-head.

Weights follow nn.Linear: ``y = x @ W.T + b``. Keys are processed in blocks, so that the memory check's million
keys never build an (n, hidden_dim) array in the grader either; the result is the same as in one block.
"""

from __future__ import annotations

import numpy as np

from grader.check import memoised, substitutable

BLOCK = 65536


def softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max())
    return shifted / shifted.sum()


@memoised  # the memory check's million keys: the checks' own helpers (softmax_per_chunk) ask for them too
def additive_scores(query: np.ndarray, key: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    """energy_layer(tanh(query_layer(query) + key_layer(key))) for each key: shape (n,)."""
    q = query.reshape(1, -1) @ p["query_layer.weight"].T + p["query_layer.bias"]
    scores = np.empty(key.shape[0])
    for start in range(0, key.shape[0], BLOCK):
        k = key[start:start + BLOCK] @ p["key_layer.weight"].T + p["key_layer.bias"]
        scores[start:start + BLOCK] = (np.tanh(q + k) @ p["energy_layer.weight"].T)[:, 0] + p["energy_layer.bias"][0]
    return scores


@substitutable
def additive_attention(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                       p: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(weighted_sum (value_dim,), attention_weights (n,)) for query (1, input_dim), key (n, d), value (n, v)."""
    weights = softmax(additive_scores(query.astype(np.float64), key.astype(np.float64), p))
    return weights @ value.astype(np.float64), weights


@substitutable
def multi_head_attention(query: np.ndarray, key: np.ndarray, value: np.ndarray, heads: list[dict[str, np.ndarray]],
                         out: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(output (input_dim,), attention_weights (num_heads, n)): out_layer over the heads' concatenated sums."""
    sums, weights = zip(*(additive_attention(query, key, value, head) for head in heads))
    output = np.concatenate(sums) @ out["out_layer.weight"].T + out["out_layer.bias"]
    return output, np.stack(weights)
