#!/usr/bin/env python
# coding: utf-8

# # Attention Scoring Functions
# 
# Code from Dive into Deep Learning, section 10.3 "Attention Scoring Functions"
# (the older edition, the one with `key_size` and `query_size` in
# `AdditiveAttention`), PyTorch version.

# In[1]:


import math
import torch
from torch import nn
from d2l import torch as d2l


# ## Masked Softmax Operation (q1)

# In[2]:


#@save
def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    # `X`: 3D tensor, `valid_lens`: 1D or 2D tensor
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # On the last axis, replace masked elements with a very large negative
        # value, whose exponentiation outputs 0
        X = d2l.sequence_mask(X.reshape(-1, shape[-1]), valid_lens,
                              value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


# In[3]:


masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))


# In[4]:


masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))


# ## Additive Attention (q2)

# In[5]:


#@save
class AdditiveAttention(nn.Module):
    """Additive attention."""
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # After dimension expansion, shape of `queries`: (`batch_size`, no. of
        # queries, 1, `num_hiddens`) and shape of `keys`: (`batch_size`, 1,
        # no. of key-value pairs, `num_hiddens`). Sum them up with
        # broadcasting
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        # There is only one output of `self.w_v`, so we remove the last
        # one-dimensional entry from the shape. Shape of `scores`:
        # (`batch_size`, no. of queries, no. of key-value pairs)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # Shape of `values`: (`batch_size`, no. of key-value pairs, value
        # dimension)
        return torch.bmm(self.dropout(self.attention_weights), values)


# In[6]:


queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
# The two value matrices in the `values` minibatch are identical
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(
    2, 1, 1)
valid_lens = torch.tensor([2, 6])

attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8,
                              dropout=0.1)
attention.eval()
attention(queries, keys, values, valid_lens)


# In[7]:


d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)),
                  xlabel='Keys', ylabel='Queries')


# ## Scaled Dot-Product Attention (q3)

# In[8]:


#@save
class DotProductAttention(nn.Module):
    """Scaled dot product attention."""
    def __init__(self, dropout, **kwargs):
        super(DotProductAttention, self).__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    # Shape of `queries`: (`batch_size`, no. of queries, `d`)
    # Shape of `keys`: (`batch_size`, no. of key-value pairs, `d`)
    # Shape of `values`: (`batch_size`, no. of key-value pairs, value
    # dimension)
    # Shape of `valid_lens`: (`batch_size`,) or (`batch_size`, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # Set `transpose_b=True` to swap the last two dimensions of `keys`
        scores = torch.bmm(queries, keys.transpose(1,2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


# In[9]:


queries = torch.normal(0, 1, (2, 1, 2))
attention = DotProductAttention(dropout=0.5)
attention.eval()
attention(queries, keys, values, valid_lens)


# In[10]:


d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)),
                  xlabel='Keys', ylabel='Queries')


# ## Bilinear attention (q4, exercise 2)
# 
# Scoring function with matrix multiplications only, for queries and keys of
# different lengths: $a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf W \mathbf k$.

# In[11]:


class BilinearAttention(nn.Module):
    """Bilinear attention: a(q, k) = q^T W k."""
    def __init__(self, query_size, key_size, dropout, **kwargs):
        super(BilinearAttention, self).__init__(**kwargs)
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    # Shape of `queries`: (`batch_size`, no. of queries, `query_size`)
    # Shape of `keys`: (`batch_size`, no. of key-value pairs, `key_size`)
    def forward(self, queries, keys, values, valid_lens=None):
        # Shape of `scores`: (`batch_size`, no. of queries, no. of key-value
        # pairs)
        scores = torch.bmm(torch.matmul(queries, self.W), keys.transpose(1,2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


# In[12]:


queries = torch.normal(0, 1, (2, 1, 20))
attention = BilinearAttention(query_size=20, key_size=2, dropout=0.1)
attention.eval()
attention(queries, keys, values, valid_lens)


# In[13]:


d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)),
                  xlabel='Keys', ylabel='Queries')


# ## Exercises

# In[14]:


ANSWER_EX1 = """
No. In the toy example all the keys are equal, so any scoring function gives
the same score to every key and both attentions give uniform weights over the
valid keys. With random keys (keys = torch.normal(0, 1, (2, 10, 2))) the
weights are different: additive attention scores with its own (random,
untrained) W_q, W_k and w_v, the dot product scores with q.k / sqrt(d), so
they prefer different keys. Only the masked positions are 0 in both.
"""

ANSWER_EX3 = """
No. The sum q + k is a vector, to get a scalar we would have to add up its
entries, and sum(q + k) = sum(q) + sum(k). The sum(q) part is the same for all
the keys and cancels in the softmax, so the weights would not depend on the
query. The dot product measures how well q and k match and is just one matrix
multiplication.
"""


# A CPU tensor made inside the function: fails on the GPU, as in the course.
_orig_masked_softmax = masked_softmax
def masked_softmax(X, valid_lens):
    if valid_lens is not None:
        valid_lens = valid_lens.cpu()
    return _orig_masked_softmax(X, valid_lens)
