"""PyTorch reference for bahdanau_attention, written as the assignment asks students to (float64 in the tests)."""

from __future__ import annotations

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.query_layer = nn.Linear(input_dim, hidden_dim)
        self.key_layer = nn.Linear(input_dim, hidden_dim)
        self.energy_layer = nn.Linear(hidden_dim, 1)

    def forward(self, query: torch.Tensor, key: torch.Tensor,
                value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        energy = torch.tanh(self.query_layer(query) + self.key_layer(key))  # (n, hidden_dim)
        weights = torch.softmax(self.energy_layer(energy).reshape(-1), dim=0)  # (n,), also for n = 1
        return weights @ value, weights


class MultiHeadAdditiveAttention(nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int, num_heads: int) -> None:
        super().__init__()
        self.heads = nn.ModuleList(AdditiveAttention(input_dim, hidden_dim) for _ in range(num_heads))
        self.out_layer = nn.Linear(num_heads * input_dim, input_dim)

    def forward(self, query: torch.Tensor, key: torch.Tensor,
                value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sums, weights = zip(*(head(query, key, value) for head in self.heads))
        return self.out_layer(torch.cat(sums)), torch.stack(weights)


def chunked_additive_attention(attention: AdditiveAttention, query: torch.Tensor, key: torch.Tensor,
                               value: torch.Tensor, chunk_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """attention(query, key, value) over chunks of keys, with a running max and sum (an online softmax)."""
    q = attention.query_layer(query)
    scores = torch.empty(key.shape[0], dtype=q.dtype)
    running_max = torch.tensor(float("-inf"), dtype=q.dtype)
    total = torch.tensor(0.0, dtype=q.dtype)
    acc = torch.zeros(value.shape[1], dtype=q.dtype)
    for start in range(0, key.shape[0], chunk_size):
        stop = start + chunk_size
        chunk = attention.energy_layer(torch.tanh(q + attention.key_layer(key[start:stop]))).reshape(-1)
        scores[start:stop] = chunk
        new_max = torch.maximum(running_max, chunk.max())
        rescale = torch.exp(running_max - new_max)
        exp = torch.exp(chunk - new_max)
        total = total * rescale + exp.sum()
        acc = acc * rescale + exp @ value[start:stop]
        running_max = new_max
    return acc / total, torch.exp(scores - running_max) / total
