"""# Practical 10: Attention Mechanisms

IST Deep Learning, 2021-22 (André Martins, Ben Peters).

Fill in the four places marked `raise NotImplementedError` and the two answers at the end, keeping every name and
signature. Question 1 is computed with NumPy; Question 2 uses PyTorch and the harness in `reversal.py`, which must
sit next to this file (do not change it: the grader trains your `DotProdAttention` with its own copy of it). Run
every cell before you submit.

This file is the Python version of practical10.ipynb, with the same contents: the instructions are
in this docstring and in the comments of the `# %% [markdown]` cells, and the examples run under
`if __name__ == "__main__":` (run `python practical10.py`), and then the check of your work (see the
end of this file).
"""


# %%
import numpy as np
import torch
from torch import nn


# %% [markdown]
# ## Question 1
#
# Let $x^{(1)} = [-2.0, 1.0, 0.5]^T$, $x^{(2)} = [1.0, 1.5, -0.5]^T$, $x^{(3)} = [-1.5, 1.0, -0.5]^T$,
# $x^{(4)} = [-2.0, -2.5, 1.5]^T$ be a sequence of length 4, each element a vector in $\mathbb{R}^3$, and
# $X = [x^{(1)}, x^{(2)}, x^{(3)}, x^{(4)}]^T \in \mathbb{R}^{4 \times 3}$ the input matrix. The query, the projection
# matrices and $W_O$ are below.


# %%
X = np.array([[-2.0, 1.0, 0.5],
              [1.0, 1.5, -0.5],
              [-1.5, 1.0, -0.5],
              [-2.0, -2.5, 1.5]])
q = np.array([-2.0, 1.0, -1.0])
W_Q = np.array([[1.0, -1.5], [0.0, 2.0], [-0.5, -1.0]])
W_K = np.array([[-1.5, -1.0], [2.5, 0.0], [0.5, -1.0]])
W_V = np.array([[1.0, 2.5], [-0.5, -2.0], [0.0, -1.0]])
W_O = np.array([[-1.0, 1.5, 2.0], [0.0, -1.0, -2.0], [1.0, -1.5, 0.0], [2.0, 0.0, 1.0]])


# %% [markdown]
# ### Question 1.1
#
# Let $q = [-2.0, 1.0, -1.0]^T$ be a query vector. Compute the attention probabilities and the resulting output vector
# induced by this query on $X$ using scaled dot-product attention.


# %%
def scaled_dot_product_attention(q, X):
    """The attention probabilities p induced by the query q (d,) on X (n, d), with scaled dot-product scores
    x_i . q / sqrt(d), and the output z = X^T p. Returns (p, z): shapes (n,) and (d,). Work for any n and d."""
    # YOUR CODE HERE
    raise NotImplementedError


# %%
if __name__ == "__main__":
    p, z = scaled_dot_product_attention(q, X)
    print("Q1.1 p =", np.round(p, 4), " z =", np.round(z, 4))


# %% [markdown]
# ### Question 1.2
#
# Single-head self-attention on $X$ with the projection matrices $W_Q$, $W_K$ and $W_V$ above: compute the query, key
# and value matrices $(Q, K, V)$ and the output $Z$. Plot the attention map.


# %%
def self_attention(X, W_Q, W_K, W_V):
    """Single-head self-attention on X (n, d): Q = X W_Q, K = X W_K, V = X W_V, the attention map
    A = softmax(Q K^T / sqrt(d_k)) (each row a distribution over the n positions) and Z = A V.
    Returns (Q, K, V, A, Z). Work for any sizes: d_k is the number of columns of W_K, and W_V may have another."""
    # YOUR CODE HERE
    raise NotImplementedError


# %%
if __name__ == "__main__":
    Q, K, V, A, Z = self_attention(X, W_Q, W_K, W_V)
    print("Q1.2 A =\n", np.round(A, 4), "\nZ =\n", np.round(Z, 4))
    try:  # the picture needs matplotlib, which the checks do not
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no picture; pip install matplotlib to see it)")
    else:
        plt.imshow(A, cmap="viridis")
        plt.title("Q1.2 attention map A (queries down, keys across)")
        plt.show()


# %% [markdown]
# ### Question 1.3
#
# A second attention head whose $W_Q^{(2)}$, $W_K^{(2)}$, $W_V^{(2)}$ are all-ones matrices (keeping the first head).
# Using $W_O$, compute the resulting output $Z$.


# %%
def multi_head_attention(X, heads, W_O):
    """Multi-head self-attention: heads is a list of (W_Q, W_K, W_V) triples, one per head. Each head's output Z_h
    (from self_attention) is placed side by side, [Z_1, Z_2, ...] along the features, and multiplied by W_O.
    Returns Z."""
    # YOUR CODE HERE
    raise NotImplementedError


# %%
# The second head of Question 1.3: all-ones matrices.
SECOND_HEAD = (np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)))


# %%
if __name__ == "__main__":
    print("Q1.3 Z =\n", np.round(multi_head_attention(X, [(W_Q, W_K, W_V), SECOND_HEAD], W_O), 4))


# %% [markdown]
# ## Question 2
#
# String reversal with an LSTM sequence-to-sequence model: given a string over {a, b, c, d}, return it reversed.
# `reversal.py` holds the model, the data and the training loop.
#
# 2.2: implement dot-product attention, an extra layer inside the RNN decoder. At step $t$ the query $s_t$ is the
# decoder's output and the context $F = [h_1, \dots, h_S]$ the encoder's states: $z_{ts} = s_t^T h_s$,
# $a_t = \mathrm{softmax}(z_t)$, $c_t = F a_t$, and the attentional state $\tilde{s}_t = \tanh(W_c [c_t; s_t])$.
# Padding positions of the source get weight 0.


# %%
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
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, query, context, mask=None):
        # YOUR CODE HERE
        raise NotImplementedError


# %% [markdown]
# Train the model without attention and with your `DotProdAttention` (5 epochs each, the harness's hyperparameters;
# about 10 s in all on one core).
#
# Measured on a 2-core machine, training on one thread: with a correct `DotProdAttention` the model trains in about 6
# s and reverses 99.4% of the 500 validation strings exactly (99.9% of characters); without attention it reverses
# 53.4% (79.7% of characters). The grader trains your attention with the same harness and seed and passes the training
# check at 84% exact match on 300 strings of its own after the 5 epochs, or earlier: it scores the training after every
# quarter epoch and stops as soon as the score decides (a correct attention is far above anything that fails after one
# epoch); your report says after how many epochs.


# %%
if __name__ == "__main__":
    from reversal import evaluate, plot_attention, train, translate, validation_strings

    for name, attention_class in (("without attention", None), ("with DotProdAttention", DotProdAttention)):
        model = train(attention_class)
        exact, per_char = evaluate(model, validation_strings())
        print(f"{name}: exact match {exact:.3f}, per character {per_char:.3f}")


# %% [markdown]
# ### Question 2.3
#
# Visualise the attention distributions returned by your model.


# %%
if __name__ == "__main__":
    predicted, weights = translate(model, "abcddcab")
    print("abcddcab ->", predicted)
    plot_attention(weights, "abcddcab", predicted)


# %% [markdown]
# ### Your answers
#
# Question 2.2: how does the model with attention compare with the one without? (Write in the next cell, which the
# grader hands to your instructor.)


# %%
ANSWER_COMPARE = """
_Write your answer here._
"""


# %% [markdown]
# Question 2.3: do the attention distributions look the way you expected they would? (Next cell.)


# %%
ANSWER_MAPS = """
_Write your answer here._
"""


# %% [markdown]
# ## Check your work
#
# In a terminal, in this file's folder, run `python practical10.py`: the lines below check your work
# after the examples. The check runs the assignment's public checks on what your code defines, with
# the same inputs as when your instructor grades it, and shows each question's result, what failed and
# the likely cause. To check one question, call `check("q1")` (with its id) instead. Hidden checks, on
# other inputs, also count towards your grade: they run only when your work is graded. The check needs
# the grader installed (the wheel in your kit folder) and the kit's `grader-kit` folder beside this
# file or in a folder above it. The grader does not run this check when it grades your work.


# %%
if __name__ == "__main__":
    from grader.kit import check

    check()
