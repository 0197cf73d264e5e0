"""Sample submission for the grader's tests.

Mistake (q1 only): masked_softmax reads valid_lens as padding lengths, the
number of padded keys at the end, so it keeps the first num_keys - valid_len
keys. Everything else is correct.
"""
import math

import torch
from torch import nn


def masked_softmax(X, valid_lens):
    """Softmax on the last axis; the padded keys at the end get no weight."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    num_keys = X.shape[-1]
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]  # the same for every query
    pad = valid_lens[:, :, None]  # (batch, queries or 1, 1): padded keys at the end
    keep = torch.arange(num_keys, device=X.device)[None, None, :] < num_keys - pad
    return torch.softmax(X.masked_fill(~keep, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = self.W_q(queries)
        k = self.W_k(keys)
        scores = self.w_v(torch.tanh(q[:, :, None, :] + k[:, None, :, :]))[..., 0]
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ self.W @ keys.transpose(1, 2)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))

queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])
attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
attention.eval()
print(attention(queries, keys, values, valid_lens))
print(attention.attention_weights)

ANSWER_EX1 = """
Not the same. With equal keys every scoring function gives equal scores so the
weights are uniform for both. With different keys the additive attention and
the dot product give different scores (different functions), so the weights
are different.
"""

ANSWER_EX3 = """
No, because after summing, the part coming from the query is the same for all
keys and disappears in the softmax. The dot product multiplies q and k, so it
depends on both, and it is faster.
"""
