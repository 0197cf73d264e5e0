"""Mask code with its shape asserted, and PyTorch's key_padding_mask convention (True = padding) in
DotProductAttention."""
import math
import torch
from torch import nn
import torch.nn.functional as F


def masked_softmax(X, mask):
    # mask: (batch, queries, keys), True for the keys each query may attend
    assert mask.shape == X.shape, f"mask {tuple(mask.shape)} does not match the scores {tuple(X.shape)}"
    return F.softmax(X.masked_fill(~mask, -1e6), dim=-1)


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

    def forward(self, queries, keys, values, key_padding_mask=None):
        # key_padding_mask: (batch, keys), True where a key is padding, as nn.MultiheadAttention takes it
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.unsqueeze(1), float("-inf"))
        self.attention_weights = scores.softmax(dim=-1)
        return self.dropout(self.attention_weights) @ values


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ self.W @ keys.transpose(1, 2)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
