"""q1 and q2 in the write-up's style, the softmax taken over dim=1 of the (n, 1) energies."""
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
        energy = torch.tanh(self.query_layer(query) + self.key_layer(key))
        scores = self.energy_layer(energy)                  # (n, 1)
        attention_weights = F.softmax(scores, dim=1).view(-1)
        weighted_sum = (attention_weights.unsqueeze(1) * value).sum(dim=0)
        return weighted_sum, attention_weights


class MultiHeadAdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim, num_heads):
        super().__init__()
        self.heads = nn.ModuleList([AdditiveAttention(input_dim, hidden_dim) for _ in range(num_heads)])
        self.out_layer = nn.Linear(num_heads * input_dim, input_dim)

    def forward(self, query, key, value):
        results = [head(query, key, value) for head in self.heads]
        output = self.out_layer(torch.cat([r[0] for r in results]))
        return output, torch.stack([r[1] for r in results])
