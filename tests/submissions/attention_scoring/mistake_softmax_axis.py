"""Sample submission for the grader's tests.

Mistake (q1 only): masked_softmax takes the softmax over dim=1 (the queries
axis) instead of the last axis (the keys). Everything else is correct.
"""
import math
import torch
from torch import nn


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    # X: 3D tensor (batch, queries, keys), valid_lens: 1D or 2D tensor
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32,
                            device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # replace masked elements with a very large negative value
        X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        # softmax over the keys (dim 0 is the batch)
        return nn.functional.softmax(X.reshape(shape), dim=1)


class AdditiveAttention(nn.Module):
    """Additive attention."""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # (batch, queries, 1, hiddens) + (batch, 1, keys, hiddens)
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
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
    """score(q, k) = q^T W k"""
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries @ self.W, keys.transpose(1, 2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


# toy example from the book
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
They are not the same anymore when the keys are different, because the additive
attention has its own weights W_q, W_k, w_v and the dot product uses q.k/sqrt(d).
"""

ANSWER_EX3 = """
_Write your answer here._
"""
