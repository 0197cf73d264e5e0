"""Sample submission for the grader's tests.

Mistake (q2 only): W_q and W_k of AdditiveAttention have bias terms
(nn.LazyLinear(num_hiddens, bias=True)), as in the Bahdanau write-ups. The
textbook's additive attention has none. Everything else is correct.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def masked_softmax(X, valid_lens):
    """Softmax over the last axis, keys at or beyond valid_lens get weight 0."""
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    num_keys = X.shape[-1]
    if valid_lens.dim() == 1:
        lens = valid_lens.view(-1, 1, 1)
    else:
        lens = valid_lens.unsqueeze(-1)
    keep = torch.arange(num_keys, device=X.device).view(1, 1, -1) < lens
    return F.softmax(X.masked_fill(~keep, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention."""

    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.LazyLinear(num_hiddens, bias=True)   # query layer
        self.W_k = nn.LazyLinear(num_hiddens, bias=True)   # key layer
        self.w_v = nn.LazyLinear(1, bias=False)            # energy layer
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = self.W_q(queries).unsqueeze(2)  # (batch, n_q, 1, h)
        k = self.W_k(keys).unsqueeze(1)     # (batch, 1, n_k, h)
        energy = torch.tanh(q + k)          # (batch, n_q, n_k, h)
        scores = self.w_v(energy).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    """Multiplicative ("general") attention: a(q, k) = q^T W k."""

    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.empty(query_size, key_size))
        nn.init.xavier_uniform_(self.W)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(torch.matmul(queries, self.W), keys.transpose(1, 2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


# Toy example
queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])

attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
attention.eval()
print(attention(queries, keys, values, valid_lens))

attention = DotProductAttention(dropout=0.5)
attention.eval()
print(attention(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens))

attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
attention.eval()
print(attention(queries, keys, values, valid_lens))

ANSWER_EX1 = """
No. With the modified keys (random instead of ones) the weights are different
for the two mechanisms, since the additive one uses learned projections and a
tanh while the scaled dot product only compares q and k.
"""

ANSWER_EX3 = """
No: a sum is not a score, and reducing it to a scalar makes the query's
contribution identical for all keys, so the softmax ignores the query.
"""
