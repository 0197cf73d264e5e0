"""q1 and q2: the scores kept as an (n, 1) column all the way to the returned weights, and no tanh in the energy."""
import torch
import torch.nn as nn


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        self.query_layer = nn.Linear(input_dim, hidden_dim)
        self.key_layer = nn.Linear(input_dim, hidden_dim)
        self.energy_layer = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        # query: (1, input_dim), key: (n, input_dim), value: (n, value_dim)
        energy = self.query_layer(query) + self.key_layer(key)   # (n, hidden_dim), broadcast over the keys
        scores = self.energy_layer(energy)                        # (n, 1)
        attention_weights = torch.softmax(scores, dim=0)          # normalise over the n keys
        weighted_sum = (attention_weights * value).sum(dim=0)     # (value_dim,)
        return weighted_sum, attention_weights


class MultiHeadAdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim, num_heads):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(AdditiveAttention(input_dim, hidden_dim))
        self.out_layer = nn.Linear(num_heads * input_dim, input_dim)

    def forward(self, query, key, value):
        sums, weights = [], []
        for head in self.heads:
            s, w = head(query, key, value)
            sums.append(s)
            weights.append(w.reshape(-1))
        return self.out_layer(torch.cat(sums, dim=-1)), torch.stack(weights, dim=0)
