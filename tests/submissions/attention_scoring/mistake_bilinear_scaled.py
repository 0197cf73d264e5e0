"""Sample submission for the grader's tests.

Mistake (q4 only): BilinearAttention divides its score by sqrt(query_size),
copying the scaling of the dot product. The bilinear score is not scaled.
Everything else is correct.
"""
import math

import torch
from torch import nn


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(-1, X.shape[1])
    mask = torch.arange(X.shape[-1], device=X.device) < valid_lens[..., None]
    return torch.softmax(X.masked_fill(~mask, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    """Additive attention."""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    """Bilinear attention, q^T W k, works when queries and keys have different sizes."""
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # scale like the dot product so that the variance stays 1
        scores = queries @ self.W @ keys.transpose(1, 2) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


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
print(attention.attention_weights)

ANSWER_EX1 = """
No, only in this example. All the keys are ones, so the scores are equal for all
keys no matter how we compute them, and the weights are 1/2 and 1/6. With
random keys the two scoring functions give different scores and weights.
"""

ANSWER_EX3 = """
No, the dot product is better: it is one matrix multiplication and it measures
the similarity of q and k. A sum would have to be turned into a scalar, and
then the query part is the same for every key and the softmax cancels it.
"""
