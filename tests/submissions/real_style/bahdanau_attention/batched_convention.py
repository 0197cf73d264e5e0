"""q1 written for batches, as in the seq2seq tutorials: query (batch, 1, d), keys (batch, n, d)."""
import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        self.query_layer = nn.Linear(input_dim, hidden_dim)
        self.key_layer = nn.Linear(input_dim, hidden_dim)
        self.energy_layer = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        energy = torch.tanh(self.query_layer(query) + self.key_layer(key))  # (batch, n, hidden)
        attention_weights = torch.softmax(self.energy_layer(energy).squeeze(2), dim=1)  # (batch, n)
        weighted_sum = torch.bmm(attention_weights.unsqueeze(1), value).squeeze(1)  # (batch, value_dim)
        return weighted_sum, attention_weights
