"""PyTorch reference for keras_additive_attention, written as the assignment asks students to."""

from __future__ import annotations

import torch
from torch import nn


class KerasAdditiveAttention(nn.Module):
    def __init__(self, dim: int, use_scale: bool = True, causal: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        self.use_scale = use_scale
        self.causal = causal
        self.dropout = nn.Dropout(dropout)
        if use_scale:
            self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, query: torch.Tensor, value: torch.Tensor, key: torch.Tensor | None = None,
                query_mask: torch.Tensor | None = None, value_mask: torch.Tensor | None = None,
                return_attention_scores: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        key = value if key is None else key
        features = torch.tanh(query.unsqueeze(-2) + key.unsqueeze(-3))  # (batch, Tq, Tv, dim)
        if self.use_scale:
            features = features * self.scale
        scores = features.sum(dim=-1)
        allowed = torch.ones_like(scores, dtype=torch.bool)
        if self.causal:
            allowed = allowed & torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
        if value_mask is not None:
            allowed = allowed & value_mask.bool().unsqueeze(-2)
        scores = torch.where(allowed, scores, scores - 1e9)
        distribution = self.dropout(torch.softmax(scores, dim=-1))
        output = distribution @ value
        if query_mask is not None:
            output = output * query_mask.unsqueeze(-1).to(output.dtype)
        return (output, distribution) if return_attention_scores else output
