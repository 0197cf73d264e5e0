# q2 mistake: value_mask read as True where a key is padding (PyTorch's key_padding_mask), the reverse of Keras.
r"""# The Keras `AdditiveAttention` layer, in PyTorch

Keras ships a Bahdanau-style attention layer, `keras.layers.AdditiveAttention`
(<https://keras.io/api/layers/attention_layers/additive_attention/>). You port its exact semantics to PyTorch, so
that `KerasAdditiveAttention` gives the numbers Keras gives, masks and all (the grader's reference is checked
against Keras itself).

With `query` of shape `(batch, Tq, dim)`, `value` and `key` of shape `(batch, Tv, dim)`:

1. `scores[b, i, j] = sum over d of scale[d] * tanh(query[b, i, d] + key[b, j, d])`: reshape `query` to
   `(batch, Tq, 1, dim)` and `key` to `(batch, 1, Tv, dim)`, add, `tanh`, multiply by `scale` (a learned vector of
   shape `(dim,)`, only with `use_scale=True`), sum over the last axis.
2. Masking: where a key must not be attended, **subtract 1e9** from its score: keys with `value_mask == False`
   (padding), and with `causal=True`, keys `j > i` for query `i` (query `i` attends keys `0..i`).
3. `distribution = softmax(scores)` over the keys (the last axis); in training mode, dropout on the distribution.
4. `output = distribution @ value`, shape `(batch, Tq, dim)`; rows of queries with `query_mask == False` are zero.

| question | what the grader checks | points |
| --- | --- | --- |
| q1 | scores and output: `scale`, `key` omitted or given, `use_scale=False`, the returned distribution | 40 |
| q2 | masks: `value_mask`, `query_mask`, `causal` (also with `Tq != Tv`), together | 45 |
| q3 | dropout on the distribution: none in eval mode, dropped and rescaled in training mode | 15 |

## How this assignment is graded

- Submit this notebook as `<your id>.ipynb`, or `keras_additive_attention.py` as `<your id>.py`.
- Replace every `raise NotImplementedError`. **Do not rename** the class, its arguments or `scale`: the grader calls
  them by name and sets `scale` to known values.
- The grader compares your distribution and output with the reference in eval mode (`.eval()`) on the examples
  below and on random shapes and masks (float32 tolerance). The masks and dropout checks use `use_scale=False`, so
  a mistake with `scale` costs points in q1 only.
- Warnings and printed output never cost points.

This file is the Python version of keras_additive_attention.ipynb, with the same contents:
the instructions are in the comments of the `# %% [markdown]` cells, and the examples run under
`if __name__ == "__main__":` (run `python keras_additive_attention.py`).
"""


# %%
import torch
from torch import nn


# %% [markdown]
# ## `KerasAdditiveAttention`
#
# - `__init__(self, dim, use_scale=True, causal=False, dropout=0.0)`: with `use_scale`, a parameter `self.scale` of
#   shape `(dim,)` (an `nn.Parameter`; initialise it to ones); without it, no `scale` parameter at all. Keep the
#   dropout as an `nn.Dropout(dropout)`.
# - `forward(self, query, value, key=None, query_mask=None, value_mask=None, return_attention_scores=False)`:
#   `key` defaults to `value`; the masks are boolean tensors, `query_mask` of shape `(batch, Tq)` and `value_mask` of
#   shape `(batch, Tv)`, `False` meaning padding. Return the output, or `(output, distribution)` with
#   `return_attention_scores=True` (the distribution after masking, softmax and dropout, shape `(batch, Tq, Tv)`).


# %%
class KerasAdditiveAttention(nn.Module):
    """keras.layers.AdditiveAttention: Bahdanau-style attention with optional scale, masks, causality, dropout."""

    def __init__(self, dim, use_scale=True, causal=False, dropout=0.0):
        super().__init__()
        self.use_scale = use_scale
        self.causal = causal
        self.dropout = nn.Dropout(dropout)
        if use_scale:
            self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, query, value, key=None, query_mask=None, value_mask=None, return_attention_scores=False):
        key = value if key is None else key
        features = torch.tanh(query.unsqueeze(-2) + key.unsqueeze(-3))  # (batch, Tq, Tv, dim)
        if self.use_scale:
            features = features * self.scale
        scores = features.sum(dim=-1)
        allowed = torch.ones_like(scores, dtype=torch.bool)
        if self.causal:
            allowed = allowed & torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = torch.where(allowed, scores, scores - 1e9)
        if value_mask is not None:
            # value_mask marks the padded keys, as key_padding_mask does in nn.MultiheadAttention
            scores = scores.masked_fill(value_mask.unsqueeze(1), -1e9)
        distribution = self.dropout(torch.softmax(scores, dim=-1))
        output = distribution @ value
        if query_mask is not None:
            output = output * query_mask.unsqueeze(-1)
        return (output, distribution) if return_attention_scores else output


# %% [markdown]
# ## Examples
#
# Each prints what the grader's first checks compare. With all scales 1 and `key = value`, the distribution of each
# query sums to 1; padded keys get weight 0; masked queries get zero output rows; with `causal=True` the
# distribution is lower triangular.


# %%
if __name__ == "__main__":
    torch.manual_seed(0)
    query, value = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    layer = KerasAdditiveAttention(dim=4).eval()
    output, distribution = layer(query, value, return_attention_scores=True)
    print(output.shape, distribution.shape, distribution.sum(-1))  # (2, 3, 4) (2, 3, 5) all ones

    value_mask = torch.tensor([[True, True, True, False, False], [True] * 5])
    query_mask = torch.tensor([[True, False, True], [True, True, True]])
    output, distribution = layer(query, value, value_mask=value_mask, query_mask=query_mask,
                                 return_attention_scores=True)
    print(distribution[0, :, 3:])  # zeros: padded keys
    print(output[0, 1])  # zeros: a masked query

    causal = KerasAdditiveAttention(dim=4, causal=True).eval()
    print(causal(query, torch.randn(2, 3, 4), return_attention_scores=True)[1][0])  # lower triangular
