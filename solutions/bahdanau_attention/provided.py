"""The reference AdditiveAttention, put in place of the student's while q2 and q3 are graded.

This file is sent to the student's process, so it holds only what students may see: the class q1 asks for.
It must stay self-contained (no imports from the solutions).
"""

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        self.query_layer = nn.Linear(input_dim, hidden_dim)
        self.key_layer = nn.Linear(input_dim, hidden_dim)
        self.energy_layer = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        energy = torch.tanh(self.query_layer(query) + self.key_layer(key))  # (n, hidden_dim)
        weights = torch.softmax(self.energy_layer(energy).reshape(-1), dim=0)  # (n,), also for n = 1
        return weights @ value, weights
