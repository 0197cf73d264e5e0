r"""# Attention Scoring Functions

In this assignment you implement the attention scoring functions of
*Dive into Deep Learning* (d2l), section 11.3 "Attention Scoring Functions"
(https://d2l.ai/chapter_attention-mechanisms-and-transformers/attention-scoring-functions.html).

**Attention pooling** answers a query $\mathbf q$ with a weighted average of the
values of $m$ key-value pairs $(\mathbf k_1, \mathbf v_1), \ldots, (\mathbf k_m, \mathbf v_m)$:

$$f(\mathbf q, (\mathbf k_1, \mathbf v_1), \ldots, (\mathbf k_m, \mathbf v_m)) = \sum_{i=1}^m \alpha(\mathbf q, \mathbf k_i) \mathbf v_i .$$

The attention weights are a probability distribution over the keys: a **scoring
function** $a$ maps a query and a key to a scalar, and a **softmax** over the keys
turns the scores into weights:

$$\alpha(\mathbf q, \mathbf k_i) = \mathrm{softmax}(a(\mathbf q, \mathbf k_i)) = \frac{\exp(a(\mathbf q, \mathbf k_i))}{\sum_{j=1}^m \exp(a(\mathbf q, \mathbf k_j))} .$$

Different scoring functions give different attention mechanisms. You will write:

| question | what you write | points |
| --- | --- | --- |
| q1 | `masked_softmax(X, valid_lens)` | 25 |
| q2 | `AdditiveAttention` | 30 |
| q3 | `DotProductAttention` (scaled dot product) | 25 |
| q4 | `BilinearAttention` (textbook exercise 2) | 20 |
| written | answers to textbook exercises 1 and 3 | read by the instructor, no automatic points |

## How this assignment is graded

- Submit the notebook `attention_scoring.ipynb` as `<your id>.ipynb`, or its
  Python version `attention_scoring.py` as `<your id>.py` (same contents: either
  one, not both).
- Replace every `raise NotImplementedError` with your code. **Do not rename** the
  functions, classes, attributes or arguments described below: the grader looks
  them up by name.
- **Public checks**, which you can run yourself: the masked softmax examples after
  q1 and the toy example after q4, whose expected results are given.
- **Hidden checks**: the grader calls your function and classes on random tensors
  (other batch sizes, numbers of queries and keys, feature sizes; valid lengths
  `None`, 1-D and 2-D) and compares the results with a reference implementation.
  It may set the weights of your layers (the attributes named below) to known
  values first. The results are compared in evaluation mode (`.eval()`), where
  dropout must do nothing; other checks make sure dropout does act in training
  mode (`.train()`). Use the `dropout` attribute (an `nn.Dropout`) for both.
- q2, q3 and q4 are graded with the **reference** `masked_softmax`, so a mistake in
  q1 costs points only in q1. To benefit from this, compute the attention weights
  in q2-q4 by calling `masked_softmax`.
- Warnings and printed output never cost points.
- Plotting libraries (matplotlib) and `d2l` are **not available** to the grader:
  plotting calls are ignored there. Do not depend on `d2l` for anything else:
  write your code with PyTorch only.

This file is the Python version of attention_scoring.ipynb, with the same contents: the instructions
are in this docstring and in the comments of the `# %% [markdown]` cells, and the examples run under
`if __name__ == "__main__":` (run `python attention_scoring.py`), and then the check of your work
(see the end of this file).
"""


# %%
import math

import torch
from torch import nn


# %% [markdown]
# ## q1 (25 points): masked softmax
#
# Sequences in a minibatch are padded to the same length, so not every key carries
# meaning. `masked_softmax(X, valid_lens)` takes a softmax over the last axis of `X`
# that gives **zero weight** to the keys beyond the valid length:
#
# - `X`: float tensor of shape (batch_size, no. of queries, no. of keys), the scores.
# - `valid_lens`: either
#   - `None`: no masking, a plain softmax over the last axis;
#   - a 1-D integer tensor of shape (batch_size,): one valid length per example,
#     the same for all of its queries;
#   - a 2-D integer tensor of shape (batch_size, no. of queries): one valid length
#     per query.
# - Returns a tensor of the same shape as `X`: along the last axis, the positions
#   `j >= valid_len` get weight 0 and the other weights sum to 1.
#
# As in the textbook, replace the masked scores with `-1e6` (a very large negative
# value, whose exponential is 0) and then take the softmax over the last axis.
# (With a valid length of 0 every score is replaced, so the weights are uniform,
# as in the textbook.)


# %%
def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis.

    X: float tensor of shape (batch_size, no. of queries, no. of keys).
    valid_lens: None, or an integer tensor of shape (batch_size,) or
        (batch_size, no. of queries).
    Returns a tensor shaped like X: positions at or beyond the valid length
    are replaced with -1e6 before a softmax over the last axis, so they get
    weight 0.
    """
    # YOUR CODE HERE
    raise NotImplementedError


# %%
if __name__ == "__main__":
    # Public check for q1 (the textbook's examples): the entries beyond the valid
    # lengths must be 0 and every row must sum to 1.
    print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
    print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))


# %% [markdown]
# ## q2 (30 points): additive attention
#
# When queries and keys are vectors of different lengths, additive attention scores
# a query $\mathbf q \in \mathbb R^q$ and a key $\mathbf k \in \mathbb R^k$ with
#
# $$a(\mathbf q, \mathbf k) = \mathbf w_v^\top \tanh(\mathbf W_q \mathbf q + \mathbf W_k \mathbf k) \in \mathbb R,$$
#
# where $\mathbf W_q \in \mathbb R^{h \times q}$, $\mathbf W_k \in \mathbb R^{h \times k}$ and
# $\mathbf w_v \in \mathbb R^h$ are learnable and there are **no bias terms**
# ($h$ is `num_hiddens`).
#
# Write `AdditiveAttention(num_hiddens, dropout, **kwargs)`, an `nn.Module` with
# these attributes (the names are checked):
#
# - `W_q` and `W_k`: `nn.LazyLinear(num_hiddens, bias=False)`;
# - `w_v`: `nn.LazyLinear(1, bias=False)`;
# - `dropout`: `nn.Dropout(dropout)`.
#
# `forward(self, queries, keys, values, valid_lens)`:
#
# - `queries`: (batch_size, no. of queries, query_size), `keys`: (batch_size, no. of
#   keys, key_size), `values`: (batch_size, no. of keys, value_size), `valid_lens`:
#   as in q1;
# - compute the scores, of shape (batch_size, no. of queries, no. of keys) (hint: add
#   `W_q q` and `W_k k` by broadcasting, after `unsqueeze`);
# - store `self.attention_weights = masked_softmax(scores, valid_lens)` (before dropout);
# - return `torch.bmm(self.dropout(self.attention_weights), values)`, of shape
#   (batch_size, no. of queries, value_size).
#
# The signature of the older edition of the textbook is also accepted:
# `AdditiveAttention(key_size, query_size, num_hiddens, dropout, **kwargs)` with
# `W_k = nn.Linear(key_size, num_hiddens, bias=False)`,
# `W_q = nn.Linear(query_size, num_hiddens, bias=False)` and
# `w_v = nn.Linear(num_hiddens, 1, bias=False)`: the grader passes the sizes by
# parameter name (`key_size=..., query_size=..., num_hiddens=..., dropout=...`).


# %%
class AdditiveAttention(nn.Module):
    """Additive attention.

    Attributes (names are checked by the grader):
        W_q: nn.LazyLinear(num_hiddens, bias=False), applied to the queries.
        W_k: nn.LazyLinear(num_hiddens, bias=False), applied to the keys.
        w_v: nn.LazyLinear(1, bias=False), maps tanh(W_q q + W_k k) to a score.
        dropout: nn.Dropout(dropout), applied to the attention weights.
        attention_weights: set by forward, (batch_size, no. of queries,
            no. of keys), before dropout.
    """

    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, queries, keys, values, valid_lens):
        # Shape of queries: (batch_size, no. of queries, query_size)
        # Shape of keys: (batch_size, no. of keys, key_size)
        # Shape of values: (batch_size, no. of keys, value_size)
        # Shape of valid_lens: None, (batch_size,) or (batch_size, no. of queries)
        # Returns: (batch_size, no. of queries, value_size)
        # YOUR CODE HERE
        raise NotImplementedError


# %% [markdown]
# ## q3 (25 points): scaled dot-product attention
#
# When queries and keys have the same length $d$, the dot product is a cheaper
# scoring function. If the entries of $\mathbf q$ and $\mathbf k$ are independent
# with zero mean and unit variance, $\mathbf q^\top \mathbf k$ has variance $d$, so
# the scaled dot-product score divides it by $\sqrt d$:
#
# $$a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf k / \sqrt{d}, \qquad
# \mathrm{softmax}\left(\frac{\mathbf Q \mathbf K^\top}{\sqrt d}\right) \mathbf V \text{ for a minibatch.}$$
#
# Write `DotProductAttention(dropout)`, an `nn.Module` with the attribute `dropout`
# (`nn.Dropout(dropout)`), and `forward(self, queries, keys, values, valid_lens=None)`:
#
# - `queries`: (batch_size, no. of queries, d), `keys`: (batch_size, no. of keys, d),
#   `values`: (batch_size, no. of keys, value_size);
# - scores = queries @ keys$^\top$ / sqrt(d), with `d = queries.shape[-1]`, of shape
#   (batch_size, no. of queries, no. of keys);
# - store `self.attention_weights = masked_softmax(scores, valid_lens)` (before dropout);
# - return `torch.bmm(self.dropout(self.attention_weights), values)`.


# %%
class DotProductAttention(nn.Module):
    """Scaled dot product attention.

    Attributes (names are checked by the grader):
        dropout: nn.Dropout(dropout), applied to the attention weights.
        attention_weights: set by forward, (batch_size, no. of queries,
            no. of keys), before dropout.
    """

    def __init__(self, dropout):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, queries, keys, values, valid_lens=None):
        # Shape of queries: (batch_size, no. of queries, d)
        # Shape of keys: (batch_size, no. of keys, d)
        # Shape of values: (batch_size, no. of keys, value_size)
        # Shape of valid_lens: None, (batch_size,) or (batch_size, no. of queries)
        # Returns: (batch_size, no. of queries, value_size)
        # YOUR CODE HERE
        raise NotImplementedError


# %% [markdown]
# ## q4 (20 points): bilinear attention (textbook exercise 2)
#
# Exercise 2 of the textbook asks: *"Using matrix multiplications only, can you design
# a new scoring function for queries and keys with different vector lengths?"*
#
# One answer is the **bilinear** score (the "general" score of Luong et al., 2015):
# with a learnable matrix $\mathbf W \in \mathbb R^{q \times k}$,
#
# $$a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf W \mathbf k \in \mathbb R,
# \qquad \text{scores} = \mathbf Q \mathbf W \mathbf K^\top \text{ for a minibatch.}$$
#
# The score is **not** scaled.
#
# Write `BilinearAttention(query_size, key_size, dropout)`, an `nn.Module` with the
# attributes
#
# - `W`: `nn.Parameter` of shape (query_size, key_size) (initialize it with, e.g.,
#   `torch.randn(query_size, key_size) * 0.01`, or an `nn.init` function);
# - `dropout`: `nn.Dropout(dropout)`;
#
# and `forward(self, queries, keys, values, valid_lens=None)`:
#
# - `queries`: (batch_size, no. of queries, query_size), `keys`: (batch_size, no. of
#   keys, key_size), `values`: (batch_size, no. of keys, value_size);
# - scores = queries @ W @ keys$^\top$, of shape (batch_size, no. of queries, no. of keys);
# - store `self.attention_weights = masked_softmax(scores, valid_lens)` (before dropout);
# - return `torch.bmm(self.dropout(self.attention_weights), values)`.


# %%
class BilinearAttention(nn.Module):
    """Bilinear attention: a(q, k) = q^T W k (not scaled).

    Attributes (names are checked by the grader):
        W: nn.Parameter of shape (query_size, key_size).
        dropout: nn.Dropout(dropout), applied to the attention weights.
        attention_weights: set by forward, (batch_size, no. of queries,
            no. of keys), before dropout.
    """

    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, queries, keys, values, valid_lens=None):
        # Shape of queries: (batch_size, no. of queries, query_size)
        # Shape of keys: (batch_size, no. of keys, key_size)
        # Shape of values: (batch_size, no. of keys, value_size)
        # Shape of valid_lens: None, (batch_size,) or (batch_size, no. of queries)
        # Returns: (batch_size, no. of queries, value_size)
        # YOUR CODE HERE
        raise NotImplementedError


# %% [markdown]
# ## The toy example (public check)
#
# The textbook's toy example: queries, keys and values of shapes (batch size, number
# of steps, feature size) (2, 1, 20), (2, 10, 2) and (2, 10, 4), with valid lengths
# 2 and 6. All the keys are the same, so no query can tell them apart: the attention
# weights are uniform over the valid keys, and the output is the average of the
# first 2 (first example) and the first 6 (second example) rows of `values`:
#
# ```
# tensor([[[ 2.,  3.,  4.,  5.]],
#
#         [[10., 11., 12., 13.]]])
# ```
#
# for each of the three classes (up to rounding, plus a `grad_fn` for the classes
# with parameters). Dropout is switched off by `.eval()`.


# %%
if __name__ == "__main__":
    torch.manual_seed(0)
    queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
    # The two value matrices in the values minibatch are identical
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])

    attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))  # expected rows [2, 3, 4, 5] and [10, 11, 12, 13]


# %%
if __name__ == "__main__":
    # For the dot product, the queries have the same feature size as the keys.
    queries = torch.normal(0, 1, (2, 1, 2))
    attention = DotProductAttention(dropout=0.5)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))  # expected rows [2, 3, 4, 5] and [10, 11, 12, 13]


# %%
if __name__ == "__main__":
    queries = torch.normal(0, 1, (2, 1, 20))
    attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))  # expected rows [2, 3, 4, 5] and [10, 11, 12, 13]


# %% [markdown]
# ## Visualizing the attention weights
#
# `show_heatmaps` draws a grid of heatmaps, like `d2l.show_heatmaps`. `matrices` has
# shape (no. of rows, no. of columns, no. of queries, no. of keys). matplotlib is
# imported inside the function because the grader has no plotting library (plotting
# calls are ignored there); on your machine, install matplotlib to see the figure.


# %%
def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5),
                  cmap='Reds'):
    """Show heatmaps of matrices of shape (rows, cols, no. of queries, no. of keys)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed: no heatmap')
        return
    matrices = torch.as_tensor(matrices).detach().cpu()
    num_rows, num_cols, _, _ = matrices.shape
    fig, axes = plt.subplots(num_rows, num_cols, figsize=figsize,
                             sharex=True, sharey=True, squeeze=False)
    for i, (row_axes, row_matrices) in enumerate(zip(axes, matrices)):
        for j, (ax, matrix) in enumerate(zip(row_axes, row_matrices)):
            pcm = ax.imshow(matrix.numpy(), cmap=cmap)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
    fig.colorbar(pcm, ax=axes, shrink=0.6)
    plt.show()


# %%
if __name__ == "__main__":
    # The weights of the last attention run above (the bilinear one). Since all the
    # keys are the same, they are uniform over the valid keys: 1/2 on the first 2 keys
    # of the first example, 1/6 on the first 6 keys of the second.
    show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)),
                  xlabel='Keys', ylabel='Queries')


# %% [markdown]
# ## Written answers (read by the instructor, no automatic points)
#
# Answer in a few sentences each, in the answer cells below (in the `.py` version:
# in the strings `ANSWER_EX1` and `ANSWER_EX3`). Keep the first line of each answer
# cell as it is.
#
# ### Exercise 1
#
# Modify keys in the toy example and visualize attention weights. Do additive
# attention and scaled dot-product attention still output the same attention
# weights? Why or why not?


# %%
# **Your answer to exercise 1:** (write it in this string)
ANSWER_EX1 = """
_Write your answer here._
"""


# %% [markdown]
# ### Exercise 3
#
# When queries and keys have the same vector length, is vector summation a better
# design than dot product for the scoring function? Why or why not?


# %%
# **Your answer to exercise 3:** (write it in this string)
ANSWER_EX3 = """
_Write your answer here._
"""


# %% [markdown]
# ## Check your work
#
# In a terminal, in this file's folder, run `python attention_scoring.py`: the lines below check your
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
