r"""# Bahdanau additive attention: one query, many heads, a million keys

Additive attention (Bahdanau, Cho and Bengio, 2015, "Neural Machine Translation by Jointly Learning to Align and
Translate") scores a query $\mathbf q$ against each key $\mathbf k_i$ with a small feed-forward network:

$$e_i = \mathbf w_e^\top \tanh(W_q \mathbf q + \mathbf b_q + W_k \mathbf k_i + \mathbf b_k) + b_e ,\qquad
\alpha_i = \frac{\exp(e_i)}{\sum_j \exp(e_j)} ,\qquad \text{output} = \sum_i \alpha_i \mathbf v_i .$$

You implement it for one query against $n$ keys, then with several heads, then for sequences too long to score in
one piece:

| question | what you write | points |
| --- | --- | --- |
| q1 | `AdditiveAttention` (fixing the write-up's code) | 30 |
| q2 | `MultiHeadAdditiveAttention` | 40 |
| q3 | `chunked_additive_attention` (online softmax) | 30 |

## How this assignment is graded

- Submit this notebook as `<your id>.ipynb`, or its Python version `bahdanau_attention.py` as `<your id>.py`.
- Replace every `raise NotImplementedError` with your code. **Do not rename** the classes, attributes, functions or
  arguments: the grader looks them up by name and sets the weights of the layers named below to known values.
- Public checks (the examples below, and more with the same sizes) and hidden checks on random sizes compare your
  results with a reference implementation (float32 tolerance).
- q2 and q3 are graded with the **reference** `AdditiveAttention`, so a mistake in q1 costs points only in q1.
- q3 is also run on a million keys under `torch.no_grad()` (as at inference) with a memory budget: code that builds
  an `(n, hidden_dim)` tensor runs out.
- Warnings and printed output never cost points; plotting calls are ignored by the grader.

This file is the Python version of bahdanau_attention.ipynb, with the same contents: the
instructions are in this docstring and in the comments of the `# %% [markdown]` cells, and the
examples run under `if __name__ == "__main__":` (run `python bahdanau_attention.py`), and then the
check of your work (see the end of this file).
"""


# %%
import torch
from torch import nn


# %% [markdown]
# ## q1. `AdditiveAttention` (30 points)
#
# The write-up this assignment starts from has this class, with a syntax error in `forward` and a `.squeeze()` that
# breaks when there is a single key (`n = 1`): the scores then become a 0-d tensor.
#
# ```python
# class AdditiveAttention(nn.Module):
#     def __init__(self, input_dim, hidden_dim):
#         super(AdditiveAttention, self).__init__()
#         self.query_layer = nn.Linear(input_dim, hidden_dim)
#         self.key_layer = nn.Linear(input_dim, hidden_dim)
#         self.energy_layer = nn.Linear(hidden_dim, 1)
#
#     def forward(self, query, key, value):
#         query = self.query_layer(query).unsqueeze(0)
#         key = self.key_layer(key)
#         energy = torch.tanh(query + key)
#         attention_weights = torch.softmax(self.energy_layer(energy).squeeze(), dim= weighted_sum = torch.sum(attention_weights.unsqueeze(1) * value, dim=0)
#         return weighted_sum, attention_weights
# ```
#
# Write a correct version:
#
# - `__init__(self, input_dim, hidden_dim)`: `query_layer` and `key_layer` are `nn.Linear(input_dim, hidden_dim)`,
#   `energy_layer` is `nn.Linear(hidden_dim, 1)`, all **with bias**.
# - `forward(self, query, key, value)`: `query` has shape `(1, input_dim)`, `key` `(n, input_dim)`, `value`
#   `(n, value_dim)` (`value_dim` may differ from `input_dim`). Return `(weighted_sum, attention_weights)` of shapes
#   `(value_dim,)` and `(n,)`; the weights are a softmax over the `n` keys. It must work for `n = 1`.


# %%
class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention of one query against n keys."""

    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, query, key, value):
        # YOUR CODE HERE
        raise NotImplementedError


# %%
if __name__ == "__main__":
    torch.manual_seed(0)
    query, key, value = torch.randn(1, 20), torch.randn(10, 20), torch.randn(10, 20)
    attention = AdditiveAttention(input_dim=20, hidden_dim=32)
    weighted_sum, attention_weights = attention(query, key, value)
    print("Weighted Sum:", weighted_sum.shape)  # torch.Size([20])
    print("Attention Weights:", attention_weights.shape, float(attention_weights.sum()))  # torch.Size([10]) 1.0
    single_sum, single_weights = attention(query, key[:1], value[:1])
    print("One key:", single_weights, torch.allclose(single_sum, value[0]))  # tensor([1.]) True


# %% [markdown]
# ## q2. `MultiHeadAdditiveAttention` (40 points)
#
# Several heads, each an `AdditiveAttention` with its own weights, look at the same keys; their weighted sums are
# concatenated and mixed by a linear layer.
#
# - `__init__(self, input_dim, hidden_dim, num_heads)`: `heads` is an `nn.ModuleList` of `num_heads`
#   `AdditiveAttention(input_dim, hidden_dim)`; `out_layer` is `nn.Linear(num_heads * input_dim, input_dim)`.
# - `forward(self, query, key, value)`: the values have `input_dim` features. Return `(output, attention_weights)`:
#   `output = out_layer(concatenation of the heads' weighted sums)` of shape `(input_dim,)`, and the heads' weights
#   stacked, shape `(num_heads, n)`.


# %%
class MultiHeadAdditiveAttention(nn.Module):
    """num_heads additive attentions, their weighted sums concatenated and mixed by out_layer."""

    def __init__(self, input_dim, hidden_dim, num_heads):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, query, key, value):
        # YOUR CODE HERE
        raise NotImplementedError


# %%
if __name__ == "__main__":
    multi = MultiHeadAdditiveAttention(input_dim=20, hidden_dim=32, num_heads=4)
    output, weights = multi(query, key, value)
    print(output.shape, weights.shape)  # torch.Size([20]) torch.Size([4, 10])


# %% [markdown]
# ## q3. `chunked_additive_attention` (30 points)
#
# For a very long sequence, `key_layer(key)` alone is an `(n, hidden_dim)` tensor: 256 MB for a million keys and
# `hidden_dim = 64`. Compute the same result chunk by chunk instead, with an **online softmax**: keep the largest score
# seen so far $m$, the sum $s = \sum_j e^{e_j - m}$ and the accumulated $\mathbf a = \sum_j e^{e_j - m} \mathbf v_j$;
# when a chunk brings a larger maximum $m'$, rescale $s$ and $\mathbf a$ by $e^{m - m'}$ before adding the chunk.
# At the end, `weighted_sum = a / s`.
#
# `chunked_additive_attention(attention, query, key, value, chunk_size)` takes an `AdditiveAttention` (use its layers)
# and returns the same `(weighted_sum, attention_weights)` as `attention(query, key, value)`, without ever building a
# tensor of more than `chunk_size` rows of `hidden_dim`. Keeping the `n` scores (one number per key) to compute the
# weights at the end is fine. The last chunk may be shorter. The memory check calls it under `torch.no_grad()`, as
# inference over a long sequence would: with autograd on, every chunk's intermediates are kept for the backward pass.


# %%
def chunked_additive_attention(attention, query, key, value, chunk_size):
    """attention(query, key, value), computed over chunks of chunk_size keys with an online softmax."""
    # YOUR CODE HERE
    raise NotImplementedError


# %%
if __name__ == "__main__":
    long_key, long_value = torch.randn(1000, 20), torch.randn(1000, 20)
    expected_sum, expected_weights = attention(query, long_key, long_value)
    got_sum, got_weights = chunked_additive_attention(attention, query, long_key, long_value, chunk_size=64)
    print(torch.allclose(got_sum, expected_sum, atol=1e-5), torch.allclose(got_weights, expected_weights, atol=1e-6))


# %% [markdown]
# ## Check your work
#
# In a terminal, in this file's folder, run `python bahdanau_attention.py`: the lines below check your
# work after the examples. The check runs the assignment's public checks on what your code defines,
# with the same inputs as when your instructor grades it, and shows each question's result, what
# failed and the likely cause. To check one question, call `check("q1")` (with its id) instead. Hidden
# checks, on other inputs, also count towards your grade: they run only when your work is graded. The
# check needs the grader installed (the wheel in your kit folder) and the kit's `grader-kit` folder
# beside this file or in a folder above it. The grader does not run this check when it grades your
# work.


# %%
if __name__ == "__main__":
    from grader.kit import check

    check()
