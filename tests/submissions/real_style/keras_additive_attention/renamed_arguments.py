"""The Keras layer ported with Keras's own argument names: units and dropout_rate."""
import torch
from torch import nn
import torch.nn.functional as F


class KerasAdditiveAttention(nn.Module):
    def __init__(self, units, use_scale=True, causal=False, dropout_rate=0.0):
        super().__init__()
        self.units = units
        self.use_scale = use_scale
        self.causal = causal
        self.dropout_rate = dropout_rate
        if use_scale:
            self.scale = nn.Parameter(torch.ones(units))

    def forward(self, query, value, key=None, query_mask=None, value_mask=None, return_attention_scores=False):
        if key is None:
            key = value
        q = query[:, :, None, :]
        k = key[:, None, :, :]
        if self.use_scale:
            scores = torch.sum(self.scale * torch.tanh(q + k), dim=-1)
        else:
            scores = torch.sum(torch.tanh(q + k), dim=-1)
        padding = torch.zeros_like(scores)
        if value_mask is not None:
            padding = padding + (~value_mask[:, None, :]).float() * 1e9
        if self.causal:
            tq, tv = scores.shape[-2], scores.shape[-1]
            future = torch.triu(torch.ones(tq, tv, device=scores.device), diagonal=1)
            padding = padding + future[None] * 1e9
        weights = F.softmax(scores - padding, dim=-1)
        weights = F.dropout(weights, p=self.dropout_rate, training=self.training)
        result = torch.matmul(weights, value)
        if query_mask is not None:
            result = result * query_mask[:, :, None].to(result.dtype)
        if return_attention_scores:
            return result, weights
        return result
