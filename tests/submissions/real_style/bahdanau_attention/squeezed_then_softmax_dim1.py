"""q1 only: the energies squeezed to (n,) with squeeze(-1), then a softmax over dim=1 as in the batched tutorials."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super(AdditiveAttention, self).__init__()
        self.query_layer = nn.Linear(input_dim, hidden_dim)
        self.key_layer = nn.Linear(input_dim, hidden_dim)
        self.energy_layer = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        q = self.query_layer(query)
        k = self.key_layer(key)
        e = self.energy_layer(torch.tanh(q + k)).squeeze(-1)
        a = F.softmax(e, dim=1)
        return torch.matmul(a, value), a
