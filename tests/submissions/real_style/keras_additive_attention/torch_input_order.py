"""The Keras layer with PyTorch's input order, forward(query, key, value), as nn.MultiheadAttention takes them."""
import torch
from torch import nn


class KerasAdditiveAttention(nn.Module):
    """Bahdanau-style additive attention, like tf.keras.layers.AdditiveAttention."""

    def __init__(self, dim, use_scale=True, causal=False, dropout=0.0):
        super().__init__()
        self.use_scale = use_scale
        self.causal = causal
        self.drop = nn.Dropout(dropout)
        if use_scale:
            self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, query, key, value=None, query_mask=None, value_mask=None, return_attention_scores=False):
        # same convention as nn.MultiheadAttention: query, key, value
        if value is None:  # self-attention over one sequence
            value = key
        # (B, Tq, 1, dim) + (B, 1, Tv, dim) -> (B, Tq, Tv, dim)
        h = torch.tanh(query.unsqueeze(2) + key.unsqueeze(1))
        if self.use_scale:
            h = h * self.scale
        scores = h.sum(-1)
        if value_mask is not None:
            scores = scores.masked_fill(~value_mask.unsqueeze(1), -1e9)
        if self.causal:
            Tq, Tv = scores.shape[1], scores.shape[2]
            future = torch.ones(Tq, Tv, dtype=torch.bool, device=scores.device).triu(1)
            scores = scores.masked_fill(future, -1e9)
        attn = self.drop(torch.softmax(scores, dim=-1))
        out = torch.bmm(attn, value)
        if query_mask is not None:
            out = out * query_mask.unsqueeze(-1).float()
        if return_attention_scores:
            return out, attn
        return out
