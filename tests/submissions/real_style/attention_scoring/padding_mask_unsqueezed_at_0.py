"""DotProductAttention builds its own padding mask from valid_lens, (batch, keys), and unsqueezes it at dim 0."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def masked_softmax(X, valid_lens):
    """Softmax over the last axis, keys past valid_lens masked out."""
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    batch, num_queries, num_keys = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(batch, num_queries)
    positions = torch.arange(num_keys, device=X.device)
    keep = positions[None, None, :] < valid_lens[:, :, None]
    return F.softmax(X.masked_fill(~keep, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = self.W_q(queries)[:, :, None, :]
        k = self.W_k(keys)[:, None, :, :]
        scores = self.w_v(torch.tanh(q + k))[..., 0]
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """Scaled dot product, with the padding mask built here (as in the transformer tutorial)."""

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(d)
        if valid_lens is not None:
            num_keys = keys.shape[1]
            pad_mask = torch.arange(num_keys)[None, :] >= valid_lens[:, None]  # (batch, num_keys)
            scores = scores.masked_fill(pad_mask.unsqueeze(0), -1e9)
        self.attention_weights = F.softmax(scores, dim=-1)
        return self.dropout(self.attention_weights) @ values


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W = nn.Parameter(torch.empty(query_size, key_size))
        nn.init.xavier_uniform_(self.W)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.einsum("bqi,ij,bkj->bqk", queries, self.W, keys)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
