"""The reference masked_softmax, put in place of the student's while q2-q4 are graded.

This file is sent to the student's process, so it holds only what students may see: the textbook's function.
It must stay self-contained (no imports from the solutions).
"""

import torch
from torch import nn


def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X, with positions at or beyond valid_lens masked to -1e6 (d2l 11.3)."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    flat = X.reshape(-1, shape[-1])
    mask = torch.arange(shape[-1], device=X.device)[None, :] < valid_lens[:, None]
    return nn.functional.softmax(flat.masked_fill(~mask, -1e6).reshape(shape), dim=-1)
