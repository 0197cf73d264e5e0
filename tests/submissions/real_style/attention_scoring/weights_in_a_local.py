"""d2l 11.3 written compactly; DotProductAttention keeps its weights in a local variable, not self.attention_weights."""
import math

import torch
from torch import nn
from torch.nn import functional as F


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    shape = X.shape
    lens = torch.repeat_interleave(valid_lens, shape[1]) if valid_lens.dim() == 1 else valid_lens.reshape(-1)
    keep = torch.arange(shape[-1])[None, :] < lens[:, None]
    return F.softmax(X.reshape(-1, shape[-1]).masked_fill(~keep, -1e6).reshape(shape), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        attention = masked_softmax(scores, valid_lens)  # never stored on self
        return torch.bmm(self.dropout(attention), values)


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        self.attention_weights = masked_softmax(queries @ self.W @ keys.transpose(1, 2), valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
