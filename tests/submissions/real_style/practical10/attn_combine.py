"""Practical 10, the attention layer named as in the PyTorch seq2seq tutorial (attn_combine), hidden size called
hidden_dim."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention(q, X):
    d = X.shape[1]
    p = softmax(X.dot(q) / np.sqrt(d))
    z = X.T.dot(p)
    return p, z


def self_attention(X, W_Q, W_K, W_V):
    Q = X.dot(W_Q)
    K = X.dot(W_K)
    V = X.dot(W_V)
    A = softmax(Q.dot(K.T) / np.sqrt(K.shape[-1]), axis=-1)
    Z = A.dot(V)
    return Q, K, V, A, Z


def multi_head_attention(X, heads, W_O):
    Zs = [self_attention(X, *head)[-1] for head in heads]
    return np.hstack(Zs).dot(W_O)


class DotProdAttention(nn.Module):
    def __init__(self, hidden_dim):
        super(DotProdAttention, self).__init__()
        self.attn_combine = nn.Linear(hidden_dim * 2, hidden_dim, bias=False)

    def forward(self, query, context, mask=None):
        z = torch.bmm(query, context.transpose(1, 2))
        if mask is not None:
            z = z.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        a = F.softmax(z, dim=-1)
        c = torch.bmm(a, context)
        out = torch.tanh(self.attn_combine(torch.cat((c, query), dim=2)))
        return out, a
