"""q1 with the constructor's arguments named in_features and hidden_size."""
import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, in_features, hidden_size):
        super().__init__()
        self.query_layer = nn.Linear(in_features, hidden_size)
        self.key_layer = nn.Linear(in_features, hidden_size)
        self.energy_layer = nn.Linear(hidden_size, 1)

    def forward(self, query, key, value):
        energy = torch.tanh(self.query_layer(query) + self.key_layer(key))
        weights = torch.softmax(self.energy_layer(energy).squeeze(-1), dim=0)
        return weights @ value, weights
