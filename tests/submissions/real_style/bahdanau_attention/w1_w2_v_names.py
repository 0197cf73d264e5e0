"""Bahdanau attention as the TensorFlow NMT tutorial names it (W1 for the query, W2 for the keys, V for the score),
written in PyTorch; q1 and q2 only."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super(AdditiveAttention, self).__init__()
        self.W1 = nn.Linear(input_dim, hidden_dim)
        self.W2 = nn.Linear(input_dim, hidden_dim)
        self.V = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        score = self.V(torch.tanh(self.W1(query) + self.W2(key)))  # (n, 1)
        attention_weights = F.softmax(score.view(-1), dim=0)
        context = torch.sum(attention_weights.unsqueeze(1) * value, dim=0)
        return context, attention_weights


class MultiHeadAdditiveAttention(nn.Module):
    def __init__(self, input_dim, hidden_dim, num_heads):
        super().__init__()
        self.heads = nn.ModuleList([AdditiveAttention(input_dim, hidden_dim) for _ in range(num_heads)])
        self.out_layer = nn.Linear(num_heads * input_dim, input_dim)

    def forward(self, query, key, value):
        contexts, weights = [], []
        for head in self.heads:
            c, w = head(query, key, value)
            contexts.append(c)
            weights.append(w)
        return self.out_layer(torch.cat(contexts, dim=-1)), torch.stack(weights, dim=0)
