"""Attention scoring functions, written the way the current d2l edition (1.0) writes its models.

Every class derives from ``d2l.Module``, stores its constructor arguments with ``self.save_hyperparameters()``
and gets its ``forward`` afterwards through ``@d2l.add_to_class``; the toy examples run at module level,
checked with ``d2l.check_shape`` and drawn with ``d2l.show_heatmaps``.
"""
import math

import torch
from torch import nn
from d2l import torch as d2l


# ## Masked softmax (q1)

def masked_softmax(X, valid_lens):  #@save
    """Softmax over the last axis, with the keys past each valid length masked out."""
    # X: (batch_size, no. of queries, no. of keys); valid_lens: None, 1-D or 2-D
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    # A clone, so that the caller's scores are left as they were
    X = d2l.sequence_mask(X.reshape(-1, shape[-1]).clone(), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))


# ## Additive attention (q2)

class AdditiveAttention(d2l.Module):  #@save
    """Additive attention."""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__()
        self.save_hyperparameters()
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)


@d2l.add_to_class(AdditiveAttention)  #@save
def forward(self, queries, keys, values, valid_lens):
    queries, keys = self.W_q(queries), self.W_k(keys)
    # queries: (batch_size, no. of queries, 1, num_hiddens), keys: (batch_size, 1, no. of keys, num_hiddens),
    # summed by broadcasting
    features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
    scores = self.w_v(features).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


queries = torch.normal(0, 1, (2, 1, 20))
keys = torch.ones((2, 10, 2))
# The two value matrices in the values minibatch are identical
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])

attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
attention.eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
print(attention.hparams)
d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')


# ## Scaled dot-product attention (q3)

class DotProductAttention(d2l.Module):  #@save
    """Scaled dot product attention."""
    def __init__(self, dropout, num_heads=None):
        super().__init__()
        self.save_hyperparameters()
        self.dropout = nn.Dropout(dropout)


@d2l.add_to_class(DotProductAttention)  #@save
def forward(self, queries, keys, values, valid_lens=None):
    d = queries.shape[-1]
    # Swap the last two axes of keys with keys.transpose(1, 2)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


queries = torch.normal(0, 1, (2, 1, 2))
attention = DotProductAttention(dropout=0.5)
attention.eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')


# ## Bilinear attention (q4, exercise 2)

class BilinearAttention(d2l.Module):  #@save
    """Bilinear attention: a(q, k) = q^T W k, unscaled."""
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.save_hyperparameters(ignore=['dropout'])
        self.W = nn.Parameter(torch.randn(self.query_size, self.key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)


@d2l.add_to_class(BilinearAttention)  #@save
def forward(self, queries, keys, values, valid_lens=None):
    scores = torch.bmm(queries @ self.W, keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


queries = torch.normal(0, 1, (2, 1, 20))
attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
attention.eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')


# ## Exercises

ANSWER_EX1 = """
With keys that differ, the two scorers no longer agree: additive attention passes the query and each key through
learned projections and a tanh before scoring, while scaled dot product compares them directly, so the weights
(and the heatmaps) come out different. They only coincide in the toy example because identical keys give every
valid key the same score under any scoring function.
"""

ANSWER_EX3 = """
Not as a score on its own: the sum q + k is a vector, and turning it into a scalar needs another learned map (that
is additive attention, with more parameters and a tanh per pair). The dot product is a single batched matrix
product, cheaper on hardware, and it measures how aligned the query and the key are, which a plain sum does not.
"""
