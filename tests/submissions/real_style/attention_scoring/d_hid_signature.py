"""Attention scoring, with the hidden size called d_hid as in the lecture slides."""
import math
import torch
import torch.nn as nn


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens.unsqueeze(1).expand(B, Q)
    mask = torch.arange(K, device=X.device).view(1, 1, K) < valid_lens.unsqueeze(-1)
    return torch.softmax(X.masked_fill(~mask, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, d_hid, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.LazyLinear(d_hid, bias=False)
        self.W_k = nn.LazyLinear(d_hid, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = self.W_q(queries).unsqueeze(2)   # B, Q, 1, H
        k = self.W_k(keys).unsqueeze(1)      # B, 1, K, H
        scores = self.w_v(torch.tanh(q + k)).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values


class DotProductAttention(nn.Module):
    def __init__(self, p_drop):
        super().__init__()
        self.dropout = nn.Dropout(p_drop)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values


class BilinearAttention(nn.Module):
    def __init__(self, d_q, d_k, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(d_q, d_k) / math.sqrt(d_q))
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ self.W @ keys.transpose(-2, -1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values
