# Attention scoring functions -- homework (d2l 11.3)
# I left my debugging output in because it helped me check the shapes.
# Everything is computed in float64 to avoid rounding problems in the softmax,
# then cast back to the input dtype.
import math
import sys
import warnings

import torch
from torch import nn

warnings.warn("attention homework: computing scores in float64 (slower, more precise)")
print("=" * 60)
print("loading attention_scoring homework, torch", torch.__version__)
print("=" * 60)

DEBUG = True


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    dtype = X.dtype
    X64 = X.to(torch.float64)
    if DEBUG:
        print("masked_softmax: X shape", tuple(X.shape), "valid_lens",
              None if valid_lens is None else valid_lens.tolist())
    if valid_lens is None:
        return torch.softmax(X64, dim=-1).to(dtype)
    shape = X64.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    flat = X64.reshape(-1, shape[-1]).clone()
    idx = torch.arange(shape[-1], dtype=torch.float64, device=X.device)
    mask = idx[None, :] < valid_lens[:, None].to(torch.float64)
    flat[~mask] = -1e6
    out = torch.softmax(flat.reshape(shape), dim=-1)
    if DEBUG:
        print("masked_softmax: weights\n", out)
        print("masked_softmax: row sums", out.sum(-1).flatten().tolist())
    return out.to(dtype)


class AdditiveAttention(nn.Module):
    """Additive attention."""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)
        print("AdditiveAttention created: num_hiddens =", num_hiddens,
              "dropout =", dropout)

    def forward(self, queries, keys, values, valid_lens):
        warnings.warn("AdditiveAttention.forward: LazyLinear shapes are fixed "
                      "by the first call")
        print(f"[AdditiveAttention] queries {tuple(queries.shape)} keys "
              f"{tuple(keys.shape)} values {tuple(values.shape)}", file=sys.stderr)
        queries, keys = self.W_q(queries), self.W_k(keys)
        print("after W_q:", queries.shape, "after W_k:", keys.shape)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        print("features:", features.shape)
        scores = self.w_v(features).squeeze(-1)
        print("scores:\n", scores)
        self.attention_weights = masked_softmax(scores, valid_lens)
        print("attention weights:\n", self.attention_weights)
        out = torch.bmm(self.dropout(self.attention_weights), values)
        print("output:\n", out)
        return out


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        print("DotProductAttention created: dropout =", dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        warnings.warn("DotProductAttention.forward: scores computed in float64")
        print(f"[DotProductAttention] queries {tuple(queries.shape)} keys "
              f"{tuple(keys.shape)}", file=sys.stderr)
        d = queries.shape[-1]
        scores = torch.bmm(queries.double(), keys.double().transpose(1, 2)) / math.sqrt(d)
        print("scores (float64):\n", scores)
        self.attention_weights = masked_softmax(scores, valid_lens).to(values.dtype)
        print("attention weights:\n", self.attention_weights)
        out = torch.bmm(self.dropout(self.attention_weights), values)
        print("output:\n", out)
        return out


class BilinearAttention(nn.Module):
    """Bilinear attention: score(q, k) = q^T W k."""
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)
        print("BilinearAttention created: W", tuple(self.W.shape))

    def forward(self, queries, keys, values, valid_lens=None):
        warnings.warn("BilinearAttention.forward: scores computed in float64")
        print(f"[BilinearAttention] queries {tuple(queries.shape)} keys "
              f"{tuple(keys.shape)}", file=sys.stderr)
        scores = queries.double() @ self.W.double() @ keys.double().transpose(1, 2)
        print("scores (float64):\n", scores)
        self.attention_weights = masked_softmax(scores, valid_lens).to(values.dtype)
        print("attention weights:\n", self.attention_weights)
        out = torch.bmm(self.dropout(self.attention_weights), values)
        print("output:\n", out)
        return out


# ---- testing ----
print("test masked_softmax 1-D")
print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
print("test masked_softmax 2-D")
print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))
print("test masked_softmax None")
print(masked_softmax(torch.rand(2, 2, 4), None))

queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])

attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
attention.eval()
print(attention(queries, keys, values, valid_lens))

attention = DotProductAttention(dropout=0.5)
attention.eval()
print(attention(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens))

attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
attention.eval()
print(attention(queries, keys, values, valid_lens))

for i in range(20):
    print(f"sanity check {i}: sum of weights =",
          masked_softmax(torch.randn(1, 1, 10), torch.tensor([i % 10 + 1])).sum().item())

ANSWER_EX1 = """
no, when the keys are different the two attentions give different weights
because they have different scoring functions (additive has learnable
parameters, dot product has none)
"""

ANSWER_EX3 = """
no, summation does not make the query and the key interact, q+k summed gives
sum(q)+sum(k) and sum(q) cancels in the softmax
"""
