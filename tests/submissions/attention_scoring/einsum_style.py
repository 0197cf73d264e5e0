"""Attention scoring functions (d2l 11.3), written with torch.einsum.

Every contraction is spelled out with einsum so that the index names show
which axes are summed over:
    b = batch, q = queries, k = keys (key-value pairs), h = hidden units,
    d = query/key features, v = value features.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


def _valid_mask(valid_lens, num_keys):
    """Boolean mask, True for the keys inside the valid length.

    valid_lens (batch,) -> mask (batch, 1, keys), the same for every query;
    valid_lens (batch, queries) -> mask (batch, queries, keys).
    """
    positions = torch.arange(num_keys, device=valid_lens.device)  # (keys,)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]  # (batch, 1)
    return positions[None, None, :] < valid_lens[:, :, None]


def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X (batch, queries, keys), ignoring the keys
    at or beyond the valid length (they are set to -1e6 before the softmax)."""
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    mask = _valid_mask(valid_lens.to(X.device), X.shape[-1])  # broadcasts
    return F.softmax(X.masked_fill(~mask, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    """a(q, k) = w_v^T tanh(W_q q + W_k k), no biases."""

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = torch.einsum('bqd,hd->bqh', queries, self.W_q.weight)
        k = torch.einsum('bkd,hd->bkh', keys, self.W_k.weight)
        features = torch.tanh(q[:, :, None, :] + k[:, None, :, :])  # (b, q, k, h)
        scores = torch.einsum('bqkh,h->bqk', features, self.w_v.weight[0])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """a(q, k) = q^T k / sqrt(d)."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.einsum('bqd,bkd->bqk', queries, keys) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)


class BilinearAttention(nn.Module):
    """a(q, k) = q^T W k (exercise 2: only matrix multiplications, and the
    query and key sizes can differ)."""

    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.empty(query_size, key_size))
        nn.init.normal_(self.W, std=0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.einsum('bqi,ij,bkj->bqk', queries, self.W, keys)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)


ANSWER_EX1 = """
I changed the keys to torch.normal(0, 1, (2, 10, 2)) and plotted the weights of
both attentions (queries of size 20 for the additive one, of size 2 for the dot
product). They are no longer the same. With identical keys every key gets the
same score, whatever the scoring function, so both give 1/valid_len on the valid
keys. With different keys the scores depend on the scoring function: the
additive one uses W_q, W_k and w_v (random here, since nothing is trained) and
a tanh, the dot product compares q and k directly, so they rank the keys
differently. The masking is the same for both: zero weight beyond the valid
length.
"""

ANSWER_EX3 = """
No. A score has to be a scalar. If we sum the vector q + k (or project it with
a fixed vector w), we get w.q + w.k: the w.q term is the same for every key, so
it cancels in the softmax, and the attention weights no longer depend on the
query at all, every query attends the same way. The dot product q.k has an
interaction between q and k (it is large when they point the same way), and it
costs one matrix multiplication. Summation only becomes useful with a
nonlinearity after it, as in additive attention (tanh), which is what makes
that one more expensive.
"""


if __name__ == "__main__":
    queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])

    attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))

    attention = DotProductAttention(dropout=0.5)
    attention.eval()
    print(attention(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens))

    attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))

    # 2-D valid lengths: one per query
    X = torch.rand(2, 2, 4)
    print(masked_softmax(X, torch.tensor([[1, 3], [2, 4]])))
