"""PyTorch reference for attention_scoring (the textbook's modules), checked against the NumPy one in the tests."""

from __future__ import annotations

import math

import torch
from torch import nn

from .provided import masked_softmax

__all__ = ["AdditiveAttention", "BilinearAttention", "DotProductAttention", "masked_softmax"]


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens: int, dropout: float, **kwargs) -> None:
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
    def __init__(self, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    def __init__(self, query_size: int, key_size: int, dropout: float) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ self.W @ keys.transpose(1, 2)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
