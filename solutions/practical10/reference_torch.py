"""PyTorch references for practical10, checked against the NumPy ones in tests/test_practical10.py."""

from __future__ import annotations

import math

import torch
from torch import nn


def scaled_dot_product_attention(q: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    p = torch.softmax(X @ q / math.sqrt(X.shape[1]), dim=0)
    return p, X.T @ p


def self_attention(X: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor) -> tuple:
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = torch.softmax(Q @ K.T / math.sqrt(K.shape[1]), dim=-1)
    return Q, K, V, A, A @ V


def multi_head_attention(X: torch.Tensor, heads: list, W_O: torch.Tensor) -> torch.Tensor:
    return torch.cat([self_attention(X, *head)[4] for head in heads], dim=1) @ W_O


class DotProdAttention(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.W_c = nn.Linear(2 * hidden_size, hidden_size, bias=False)

    def forward(self, query: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        scores = query @ context.transpose(1, 2)  # z_ts = s_t . h_s: (batch, T, S)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # over the source positions
        contexts = weights @ context  # c_t = sum_s a_ts h_s
        return torch.tanh(self.W_c(torch.cat([contexts, query], dim=-1))), weights
