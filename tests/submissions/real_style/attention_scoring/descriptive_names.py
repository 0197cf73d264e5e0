"""Attention scoring functions, with layers named after what they do."""
import math

import torch
from torch import nn


def masked_softmax(scores, valid_lens):
    """scores: (batch, queries, keys); valid_lens: None, (batch,) or (batch, queries)."""
    if valid_lens is None:
        return scores.softmax(dim=-1)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(-1, scores.shape[1])
    key_positions = torch.arange(scores.shape[-1], device=scores.device)
    keep = key_positions[None, None, :] < valid_lens[..., None]
    return scores.masked_fill(~keep, -1e6).softmax(dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout):
        super().__init__()
        self.query_proj = nn.Linear(query_size, num_hiddens, bias=False)
        self.key_proj = nn.Linear(key_size, num_hiddens, bias=False)
        self.score_proj = nn.Linear(num_hiddens, 1, bias=False)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        projected_queries = self.query_proj(queries)
        projected_keys = self.key_proj(keys)
        hidden = torch.tanh(projected_queries[:, :, None, :] + projected_keys[:, None, :, :])
        scores = self.score_proj(hidden)[..., 0]
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attn_dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scale = 1.0 / math.sqrt(queries.shape[-1])
        scores = torch.bmm(queries, keys.transpose(1, 2)) * scale
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attn_dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.interaction = nn.Parameter(torch.zeros(query_size, key_size))
        nn.init.normal_(self.interaction, std=0.02)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.einsum("bqi,ij,bkj->bqk", queries, self.interaction, keys)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attn_dropout(self.attention_weights), values)
