"""The reference self_attention, put in place of the student's while q3 (two heads) is graded.

This file is sent to the student's process, so it holds only what students may see: the function q2 asks for.
It must stay self-contained (no imports from the solutions).
"""

import numpy as np


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / np.sqrt(K.shape[1])
    A = np.exp(scores - scores.max(axis=1, keepdims=True))
    A = A / A.sum(axis=1, keepdims=True)
    return Q, K, V, A, A @ V
