"""A transformer tutorial's habits: the mask is 1.0 for a real key and 0.0 for padding, and masking is arithmetic
on it (scores * mask - 1e6 * (1 - mask))."""
import math
import torch
from torch import nn
import torch.nn.functional as F


def masked_softmax(X, mask):
    # X: (batch, queries, keys); mask: 1.0 for the keys to keep, 0.0 for padding; None keeps every key
    if mask is None:
        return F.softmax(X, dim=-1)
    if mask.dim() == 2:
        mask = mask.unsqueeze(1)  # (batch, 1, keys): every query sees the same keys
    X = X * mask - 1e6 * (1 - mask)
    return F.softmax(X, dim=-1)


class AdditiveAttention(nn.Module):
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
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        if valid_lens is not None:
            pad = 1 - valid_lens[:, None, :]  # (batch, 1, keys): 1.0 on the padding
            scores = scores - 1e6 * pad
        self.attention_weights = F.softmax(scores, dim=-1)
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
