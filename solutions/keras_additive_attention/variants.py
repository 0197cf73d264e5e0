"""Known mistakes in keras_additive_attention, each as the reference would compute it, with the student-facing
explanation and the edit that puts it into the model solution (tests/submissions/keras_additive_attention/
reference_style.py) for the mutation test.

Left out, because the checks cannot pin them on one question: the softmax over the queries axis (every check compares
the distribution or the output, so it costs points in q1, q2 and q3 alike) and the key ignored (the masks and dropout
checks pass a key too). Masking after the softmax with the rows renormalised, or masking with -inf, gives Keras's
numbers whenever a query keeps a key, as in every check, so it is no mistake here.
"""

from __future__ import annotations

import numpy as np

from . import reference_numpy as ref
from .checks import ASSIGNMENT

variant = ASSIGNMENT.variant


def attend(query: np.ndarray, value: np.ndarray, key: np.ndarray | None, *, scale: np.ndarray | None,
           query_mask: np.ndarray | None, value_mask: np.ndarray | None, causal: bool, upper: bool = False,
           masking: str = "subtract", hidden_true: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The reference with one thing changed: ``upper`` the causal mask triu instead of tril; ``hidden_true`` the
    value mask read as True where a key is hidden; ``masking`` "subtract"
    (1e9 from the masked scores), "zero" (masked scores set to 0) or "after" (masked weights zeroed after the
    softmax). The arguments a variant ignores are passed as None."""
    key = value if key is None else key
    features = np.tanh(query[:, :, None, :] + key[:, None, :, :])
    if scale is not None:
        features = features * scale
    scores = features.sum(axis=-1)
    batch, tq, tv = scores.shape
    allowed = np.ones((batch, tq, tv), dtype=bool)
    if causal:
        allowed = allowed & (np.triu if upper else np.tril)(np.ones((tq, tv), dtype=bool))
    if value_mask is not None:
        allowed = allowed & (~value_mask.astype(bool) if hidden_true else value_mask.astype(bool))[:, None, :]
    if masking == "zero":
        weights = ref.softmax(np.where(allowed, scores, 0.0))
    elif masking == "after":
        weights = ref.softmax(scores) * allowed
    else:
        weights = ref.softmax(np.where(allowed, scores, scores - ref.MASK_PENALTY))
        # A query with every key masked: in float32 its scores minus 1e9 are all -1e9, so its weights are uniform.
        weights = np.where(allowed.any(axis=-1, keepdims=True), weights, 1.0 / tv)
    output = weights @ value
    if query_mask is not None:
        output = np.where(query_mask.astype(bool)[..., None], output, 0.0)
    return output, weights


# ----- q1 scores and output --------------------------------------------------------------------------------------
@variant("q1", replaces=ref.additive_attention, name="scale not applied",
         explain="Your scores come out as if `scale` were not applied: multiply the tanh terms by "
                 "self.scale (shape (dim,)) before summing over the last axis: scores = (self.scale * "
                 "torch.tanh(query + key)).sum(-1), query and key broadcast.",
         mutation=[("            features = features * self.scale\n", "            pass\n")])
def q1_scale_ignored(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                     scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                     value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=None, query_mask=query_mask, value_mask=value_mask, causal=causal)


# ----- q2 masks --------------------------------------------------------------------------------------------------
@variant("q2", replaces=ref.additive_attention, name="query_mask ignored",
         explain="Your output keeps the rows of masked queries (query_mask False): Keras sets them to zero after "
                 "distribution @ value, e.g. output * query_mask.unsqueeze(-1). The query mask does not change the "
                 "distribution.",
         mutation=[("            output = output * query_mask.unsqueeze(-1)\n", "            pass\n")])
def q2_query_mask_ignored(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                          scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                          value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=None, value_mask=value_mask, causal=causal)


@variant("q2", replaces=ref.additive_attention, name="value_mask ignored",
         explain="Your distribution gives padded keys (value_mask False) a share: subtract 1e9 from their scores "
                 "before the softmax, the mask broadcast over the queries (value_mask.unsqueeze(-2)), so that they "
                 "get weight 0.",
         mutation=[("        if value_mask is not None:\n            allowed = allowed & value_mask.unsqueeze(-2)\n",
                    "")])
def q2_value_mask_ignored(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                          scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                          value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=query_mask, value_mask=None, causal=causal)


@variant("q2", replaces=ref.additive_attention, name="value_mask read as True where a key is hidden",
         explain="Your distribution gives weight to the keys value_mask marks False and none to those it marks True, "
                 "as PyTorch's key_padding_mask means it (True = padding): in Keras, value_mask is True for the keys "
                 "to attend to, so keep those (allowed & value_mask.unsqueeze(-2)).",
         mutation=[("            allowed = allowed & value_mask.unsqueeze(-2)\n",
                    "            allowed = allowed & ~value_mask.unsqueeze(-2)\n")])
def q2_value_mask_inverted(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                           scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                           value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=query_mask, value_mask=value_mask, causal=causal,
                  hidden_true=True)


@variant("q2", replaces=ref.additive_attention, name="causal mask reversed",
         explain="Your causal mask lets query i attend keys i..Tv-1, the future (triu): query i may attend keys "
                 "0..i only, a lower-triangular mask, torch.ones(Tq, Tv, dtype=torch.bool, device=scores.device)"
                 ".tril(); subtract 1e9 from the scores of keys j > i.",
         mutation=[("dtype=torch.bool).tril()", "dtype=torch.bool).triu()")])
def q2_causal_reversed(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                       scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                       value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=query_mask, value_mask=value_mask, causal=causal,
                  upper=True)


@variant("q2", replaces=ref.additive_attention, name="masked scores set to 0",
         explain="Your masked keys get the share a score of 0 would get after the softmax (exp(0) = 1): subtract "
                 "1e9 from their scores instead, torch.where(allowed, scores, scores - 1e9), so that masked keys get "
                 "weight 0.",
         mutation=[("        scores = torch.where(allowed, scores, scores - 1e9)\n",
                    "        scores = scores.masked_fill(~allowed, 0.0)\n")])
def q2_mask_zero(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                 scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                 value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=query_mask, value_mask=value_mask, causal=causal,
                  masking="zero")


@variant("q2", replaces=ref.additive_attention, name="mask applied after the softmax",
         explain="Your weights are the unmasked softmax with the masked keys set to 0, so a row's weights no longer "
                 "sum to 1: mask the scores before the softmax (subtract 1e9 where a key may not be attended), so that "
                 "the allowed keys share all the weight.",
         mutation=[("""        scores = torch.where(allowed, scores, scores - 1e9)
        distribution = self.dropout(torch.softmax(scores, dim=-1))
""", """        distribution = self.dropout(torch.softmax(scores, dim=-1) * allowed)
""")])
def q2_mask_after_softmax(query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, *,
                          scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                          value_mask: np.ndarray | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return attend(query, value, key, scale=scale, query_mask=query_mask, value_mask=value_mask, causal=causal,
                  masking="after")


# ----- q3 dropout: random, so named by the checks that see them (checks.py) ---------------------------------------
ASSIGNMENT.misconception(
    "q3", "dropout_in_eval", name="dropout active in eval mode",
    explain="Your layer gives different outputs for the same inputs in eval mode, as dropout left on does "
            "(training=True hard-coded, or F.dropout without training=self.training): use self.dropout, an "
            "nn.Dropout, which model.eval() turns off.",
    mutation=[("        distribution = self.dropout(torch.softmax(scores, dim=-1))\n",
               "        distribution = nn.functional.dropout(torch.softmax(scores, dim=-1), self.dropout.p, "
               "training=True)\n")])

ASSIGNMENT.misconception(
    "q3", "no_dropout", name="no dropout on the distribution",
    explain="Your distribution is not dropped out in training mode: apply self.dropout (nn.Dropout(dropout)) to "
            "the distribution after the softmax and before distribution @ value; it zeroes weights and scales the "
            "rest by 1 / (1 - p).",
    mutation=[("        distribution = self.dropout(torch.softmax(scores, dim=-1))\n",
               "        distribution = torch.softmax(scores, dim=-1)\n")])
