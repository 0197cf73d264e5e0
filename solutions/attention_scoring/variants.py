"""Known mistakes in attention_scoring, each as the reference would compute it, with the student-facing explanation and
the edit that puts it into the model solution (tests/submissions/attention_scoring/einsum_style.py) for the mutation
test. q2-q4 are graded with the reference masked_softmax, so their variants mask correctly.

Mistakes no reference computation shows (a bias that should not be there, dropout in eval mode or none at all) are
registered with ``misconception`` and named by the check that recognises them (checks.py). q4.transposed_W is both: a
variant (replays find it when W is square) that q4.parameter_shape also names when W has shape (key_size, query_size).

W_q and W_k swapped (q2), and keys and queries transposed (q3), raise a shape error wherever the sizes they confuse
differ, which says nothing about the cause; each question has one random check where they agree (q2.random_2d:
queries and keys of one size; q3.random_2d: as many queries as keys, as in self-attention), where such code runs,
returns wrong values, and the replay names the mistake. Left out: dropout in eval mode in BilinearAttention has no
check of its own (q4 has no eval-mode check).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import reference_numpy as ref
from .checks import ASSIGNMENT

variant = ASSIGNMENT.variant
misconception = ASSIGNMENT.misconception


def key_mask(X: np.ndarray, valid_lens: np.ndarray, *, first_query_only: bool = False,
             inclusive: bool = False) -> np.ndarray:
    """(batch, queries, keys), True for the keys a (possibly wrong) mask keeps."""
    _, queries, keys = X.shape
    valid = np.asarray(valid_lens)
    if valid.ndim == 2 and first_query_only:
        valid = valid[:, 0]
    if valid.ndim == 1:
        valid = np.repeat(valid[:, None], queries, axis=1)
    positions = np.arange(keys)[None, None, :]
    return positions <= valid[:, :, None] if inclusive else positions < valid[:, :, None]


def attend(scores: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    weights = ref.masked_softmax(scores, valid_lens)
    return weights @ np.asarray(values, np.float64), weights


# ----- q1 masked_softmax -----------------------------------------------------------------------------------------
@variant("q1", replaces=ref.masked_softmax, name="softmax over the queries axis",
         explain="Your masked_softmax normalises over dim=1, the queries, so each key's weights sum to 1 across "
                 "the queries: each query's weights must sum to 1 over the keys, a softmax over the last axis "
                 "(dim=-1), with valid_lens or without.",
         mutation=[("        return F.softmax(X, dim=-1)\n", "        return F.softmax(X, dim=1)\n"),
                   ("F.softmax(X.masked_fill(~mask, -1e6), dim=-1)", "F.softmax(X.masked_fill(~mask, -1e6), dim=1)")])
def q1_softmax_over_queries(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is not None:
        X = np.where(key_mask(X, valid_lens), X, ref.MASK_VALUE)
    return ref.softmax(X, axis=1)


@variant("q1", replaces=ref.masked_softmax, name="masked scores set to 0",
         explain="Your masked_softmax gives the keys past valid_lens the weight a score of 0 would get (exp(0) is "
                 "1, not 0): fill their scores with a very large negative value (-1e6) before the softmax, so that "
                 "their weight is 0.",
         mutation=[("X.masked_fill(~mask, -1e6)", "X.masked_fill(~mask, 0)")])
def q1_mask_value_zero(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return ref.softmax(np.where(key_mask(X, valid_lens), X, 0.0))


@variant("q1", replaces=ref.masked_softmax, name="mask applied after the softmax",
         explain="Your masked_softmax's weights are the unmasked softmax with the keys past valid_lens set to 0, so "
                 "they no longer sum to 1: mask the scores (set them to -1e6) before the softmax instead.",
         mutation=[("F.softmax(X.masked_fill(~mask, -1e6), dim=-1)", "F.softmax(X, dim=-1).masked_fill(~mask, 0)")])
def q1_mask_after_softmax(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return np.where(key_mask(X, valid_lens), ref.softmax(X), 0.0)


@variant("q1", replaces=ref.masked_softmax, name="mask off by one (keeps key valid_len)",
         explain="Your mask keeps one key too many, positions 0 to valid_len (as <= for < would): the valid keys are "
                 "positions 0 to valid_len - 1, so keep torch.arange(num_keys) < valid_lens.",
         mutation=[("positions[None, None, :] < valid_lens[:, :, None]",
                    "positions[None, None, :] <= valid_lens[:, :, None]")])
def q1_mask_off_by_one(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return ref.softmax(np.where(key_mask(X, valid_lens, inclusive=True), X, ref.MASK_VALUE))


@variant("q1", replaces=ref.masked_softmax, name="2-D valid_lens reduced to one per example",
         explain="Your masked_softmax uses one valid length per example, the first query's, when valid_lens is 2-D "
                 "(batch, queries): each query has its own, so mask row i of X with valid_lens[:, i] "
                 "(valid_lens.reshape(-1) against X.reshape(-1, num_keys)).",
         mutation=[("""    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]  # (batch, 1)
""", """    if valid_lens.dim() == 2:
        valid_lens = valid_lens[:, 0]  # one valid length per example
    valid_lens = valid_lens[:, None]  # (batch, 1)
""")])
def q1_ignores_2d_valid_lens(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return ref.softmax(np.where(key_mask(X, valid_lens, first_query_only=True), X, ref.MASK_VALUE))


@variant("q1", replaces=ref.masked_softmax, name="valid_lens read as padding lengths",
         explain="Your masked_softmax keeps the first num_keys - valid_len keys, as if valid_lens counted the padded "
                 "keys at the end: valid_lens counts the valid keys from the start, so keep positions 0 to "
                 "valid_len - 1 (torch.arange(num_keys) < valid_lens) and hide the rest.",
         mutation=[("positions[None, None, :] < valid_lens[:, :, None]",
                    "positions[None, None, :] < num_keys - valid_lens[:, :, None]")])
def q1_padding_lengths(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return ref.softmax(np.where(key_mask(X, X.shape[-1] - np.asarray(valid_lens)), X, ref.MASK_VALUE))


@variant("q1", replaces=ref.masked_softmax, name="the last valid_len keys kept",
         explain="Your masked_softmax keeps the last valid_len keys and hides the first ones, counting the valid keys "
                 "from the end: padding comes after the valid keys, so keep positions 0 to valid_len - 1 "
                 "(torch.arange(num_keys) < valid_lens) and hide the rest.",
         mutation=[("positions[None, None, :] < valid_lens[:, :, None]",
                    "positions[None, None, :] >= num_keys - valid_lens[:, :, None]")])
def q1_last_keys_kept(X: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return ref.softmax(X)
    return ref.softmax(np.where(~key_mask(X, X.shape[-1] - np.asarray(valid_lens)), X, ref.MASK_VALUE))


# ----- q2 AdditiveAttention --------------------------------------------------------------------------------------
ADDITIVE_FEATURES = "        features = torch.tanh(q[:, :, None, :] + k[:, None, :, :])  # (b, q, k, h)\n"
ADDITIVE_RETURN = """        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)


class DotProductAttention"""
DOT_RETURN = """        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)


class BilinearAttention"""
EVAL_DROPOUT = "F.dropout(self.attention_weights, p=self.dropout.p, training=True)"


def additive_with(activation: Callable[[np.ndarray], np.ndarray], queries: np.ndarray, keys: np.ndarray,
                  values: np.ndarray, valid_lens: np.ndarray | None, W_q: np.ndarray, W_k: np.ndarray,
                  w_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(queries, np.float64) @ W_q.T
    k = np.asarray(keys, np.float64) @ W_k.T
    scores = (activation(q[:, :, None, :] + k[:, None, :, :]) @ w_v.T)[..., 0]
    return attend(scores, values, valid_lens)


@variant("q2", replaces=ref.additive_attention, name="no tanh in the additive score",
         explain="Your additive score is w_v^T (W_q q + W_k k), without the tanh: then the query's part is the same "
                 "for every key and cancels in the softmax. Apply torch.tanh to W_q q + W_k k before w_v.",
         mutation=[(ADDITIVE_FEATURES, ADDITIVE_FEATURES.replace("torch.tanh(", "(", 1))])
def q2_no_tanh(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
               W_q: np.ndarray, W_k: np.ndarray, w_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return additive_with(lambda x: x, queries, keys, values, valid_lens, W_q, W_k, w_v)


@variant("q2", replaces=ref.additive_attention, name="relu in place of tanh",
         explain="Your additive score applies ReLU where the textbook applies tanh: a(q, k) = w_v^T tanh(W_q q + "
                 "W_k k). Use torch.tanh instead of the relu.",
         mutation=[(ADDITIVE_FEATURES, ADDITIVE_FEATURES.replace("torch.tanh(", "torch.relu(", 1))])
def q2_relu_for_tanh(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
                     W_q: np.ndarray, W_k: np.ndarray, w_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return additive_with(lambda x: np.maximum(x, 0.0), queries, keys, values, valid_lens, W_q, W_k, w_v)


@variant("q2", replaces=ref.additive_attention, name="W_q and W_k swapped",
         explain="Your additive score applies W_q to the keys and W_k to the queries: a(q, k) = w_v^T tanh(W_q q + "
                 "W_k k), so W_q (query_size -> num_hiddens) takes the queries and W_k takes the keys.",
         mutation=[("queries, self.W_q.weight)", "queries, self.W_k.weight)"),
                   ("keys, self.W_k.weight)", "keys, self.W_q.weight)")])
def q2_swapped_W_q_W_k(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
                       W_q: np.ndarray, W_k: np.ndarray, w_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs only when the queries and keys have one size (then W_q and W_k have one shape), as the student's does."""
    return additive_with(np.tanh, queries, keys, values, valid_lens, W_k, W_q, w_v)


misconception("q2", "bias_present", name="biases in W_q, W_k or w_v",
              explain="Your W_q, W_k or w_v has a bias term, which the additive score a(q, k) = w_v^T tanh(W_q q + "
                      "W_k k) does not have: create the three layers with bias=False (nn.Linear or nn.LazyLinear).",
              mutation=[("""        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
""", """        self.W_q = nn.Linear(query_size, num_hiddens, bias=True)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=True)
"""), ("""        q = torch.einsum('bqd,hd->bqh', queries, self.W_q.weight)
        k = torch.einsum('bkd,hd->bkh', keys, self.W_k.weight)
""", """        q, k = self.W_q(queries), self.W_k(keys)
""")])

misconception("q2", "no_projections", name="queries and keys not projected by W_q and W_k",
              explain="Your additive score adds the queries and keys as they are: a(q, k) = w_v^T tanh(W_q q + W_k k) "
                      "first maps each to num_hiddens features with W_q and W_k (nn.Linear(query_size, num_hiddens, "
                      "bias=False) and nn.Linear(key_size, num_hiddens, bias=False)), which also lets their sizes "
                      "differ.",
              mutation=[("""        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
""", ""), ("""        q = torch.einsum('bqd,hd->bqh', queries, self.W_q.weight)
        k = torch.einsum('bkd,hd->bkh', keys, self.W_k.weight)
""", """        q, k = queries, keys
""")])

misconception("q2", "dropout_in_eval", name="dropout active in eval mode",
              explain="Your AdditiveAttention gives different outputs for the same inputs after .eval(), as dropout "
                      "left on does (F.dropout(..., training=True)): call self.dropout, an nn.Dropout, which is off "
                      "in eval mode.",
              mutation=[(ADDITIVE_RETURN, ADDITIVE_RETURN.replace("self.dropout(self.attention_weights)",
                                                                  EVAL_DROPOUT))])

misconception("q2", "no_dropout", name="dropout never applied",
              explain="Your AdditiveAttention gives the same output in training and eval mode: pass the attention "
                      "weights through self.dropout (an nn.Dropout) before multiplying them by the values.",
              mutation=[(ADDITIVE_RETURN, ADDITIVE_RETURN.replace("self.dropout(self.attention_weights)",
                                                                  "self.attention_weights"))])


# ----- q3 DotProductAttention ------------------------------------------------------------------------------------
def dot_scores(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    return np.asarray(queries, np.float64) @ np.asarray(keys, np.float64).transpose(0, 2, 1)


@variant("q3", replaces=ref.dot_product_attention, name="scores not scaled by sqrt(d)",
         explain="Your scores are the plain dot products q . k: scaled dot-product attention divides them by "
                 "sqrt(d), d the length of the queries and keys (queries.shape[-1]), before the softmax.",
         mutation=[(" / math.sqrt(d)\n", "\n")])
def q3_unscaled(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    return attend(dot_scores(queries, keys), values, valid_lens)


@variant("q3", replaces=ref.dot_product_attention, name="scores divided by d instead of sqrt(d)",
         explain="Your scores are divided by d, the length of the queries and keys: scaled dot-product attention "
                 "divides them by sqrt(d) (math.sqrt(queries.shape[-1])).",
         mutation=[(" / math.sqrt(d)\n", " / d\n")])
def q3_divided_by_d(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                    valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    return attend(dot_scores(queries, keys) / np.shape(queries)[-1], values, valid_lens)


@variant("q3", replaces=ref.dot_product_attention, name="keys and queries transposed",
         explain="Your scores are K Q^T, (batch, keys, queries), the transpose of what they should be: row i must "
                 "compare query i with every key, queries @ keys.transpose(1, 2) / sqrt(d), so that the softmax runs "
                 "over the keys.",
         mutation=[("torch.einsum('bqd,bkd->bqk', queries, keys)", "torch.einsum('bqd,bkd->bkq', queries, keys)")])
def q3_keys_queries_transposed(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                               valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Runs only with as many queries as keys, as the student's code does."""
    scores = dot_scores(keys, queries) / np.sqrt(np.shape(queries)[-1])
    return attend(scores, values, valid_lens)


DOT_WEIGHTS = """        scores = torch.einsum('bqd,bkd->bqk', queries, keys) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
"""


def masked_scores(scores: np.ndarray, valid_lens: np.ndarray | None) -> np.ndarray:
    return scores if valid_lens is None else np.where(key_mask(scores, valid_lens), scores, ref.MASK_VALUE)


@variant("q3", replaces=ref.dot_product_attention, name="softmax over the queries axis",
         explain="Your DotProductAttention normalises its scores over dim=1, the queries, so each key's weights sum "
                 "to 1 across the queries: each query's weights must sum to 1 over the keys, a softmax over the last "
                 "axis (dim=-1), as masked_softmax does.",
         mutation=[(DOT_WEIGHTS, DOT_WEIGHTS.replace(
             "masked_softmax(scores, valid_lens)",
             "F.softmax(scores if valid_lens is None else scores.masked_fill(\n"
             "            ~_valid_mask(valid_lens, scores.shape[-1]), -1e6), dim=1)"))])
def q3_softmax_over_queries(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                            valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    scores = masked_scores(dot_scores(queries, keys) / np.sqrt(np.shape(queries)[-1]), valid_lens)
    weights = ref.softmax(scores, axis=1)
    return weights @ np.asarray(values, np.float64), weights


@variant("q3", replaces=ref.dot_product_attention, name="padded keys not masked",
         explain="Your DotProductAttention gives the padded keys weight, as if valid_lens were not used: pass it on, "
                 "masked_softmax(scores, valid_lens), so that the keys past each valid length get weight 0.",
         mutation=[(DOT_WEIGHTS, DOT_WEIGHTS.replace("masked_softmax(scores, valid_lens)",
                                                     "masked_softmax(scores, None)"))])
def q3_ignores_valid_lens(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                          valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    return attend(dot_scores(queries, keys) / np.sqrt(np.shape(queries)[-1]), values, None)


@variant("q3", replaces=ref.dot_product_attention, name="sequence-first layout (steps, batch, features)",
         explain="Your DotProductAttention reads its inputs as (steps, batch, features), nn.MultiheadAttention's "
                 "default: the assignment passes them batch first, queries (batch, queries, d) and keys (batch, keys, "
                 "d), so the scores are queries @ keys.transpose(1, 2) / sqrt(d).",
         mutation=[("torch.einsum('bqd,bkd->bqk', queries, keys)", "torch.einsum('qbd,kbd->bqk', queries, keys)"),
                   (DOT_RETURN, DOT_RETURN.replace("'bqk,bkv->bqv'", "'bqk,kbv->qbv'"))])
def q3_sequence_first(queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
                      valid_lens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """What (steps, batch, features) code computes from batch-first inputs, where they fit that reading: as many
    queries as keys (its batch is their axis 1), its steps the examples. Its (queries, batch, batch) scores reach the
    reference masked_softmax, which pairs their rows with the lengths flattened, as the torch one the student's code
    calls does (a count that differs raises there too)."""
    q = np.asarray(queries, np.float64).transpose(1, 0, 2)  # (queries, batch, d): per position, the examples
    k = np.asarray(keys, np.float64).transpose(1, 0, 2)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # [l, i, j] = queries[i, l] . keys[j, l] / sqrt(d)
    if valid_lens is not None:
        lengths = np.asarray(valid_lens)
        lengths = lengths.reshape(-1) if lengths.ndim == 2 else np.repeat(lengths, scores.shape[1])
        rows = scores.reshape(-1, scores.shape[-1])
        if lengths.size != rows.shape[0]:
            raise ValueError("the lengths do not pair with the scores' rows")
        kept = np.arange(rows.shape[-1])[None, :] < lengths[:, None]
        scores = np.where(kept, rows, ref.MASK_VALUE).reshape(scores.shape)
    weights = ref.softmax(scores)
    output = weights @ np.asarray(values, np.float64).transpose(1, 0, 2)  # [l, i] = sum_j weights[l, i, j] values[j, l]
    return output.transpose(1, 0, 2), weights


misconception("q3", "dropout_in_eval", name="dropout active in eval mode",
              explain="Your DotProductAttention gives different outputs for the same inputs after .eval(), as "
                      "dropout left on does (F.dropout(..., training=True)): call self.dropout, an nn.Dropout, which "
                      "is off in eval mode.",
              mutation=[(DOT_RETURN, DOT_RETURN.replace("self.dropout(self.attention_weights)", EVAL_DROPOUT))])

misconception("q3", "no_dropout", name="dropout never applied",
              explain="Your DotProductAttention gives the same output in training and eval mode: pass the attention "
                      "weights through self.dropout (an nn.Dropout) before multiplying them by the values.",
              mutation=[(DOT_RETURN, DOT_RETURN.replace("self.dropout(self.attention_weights)",
                                                        "self.attention_weights"))])


# ----- q4 BilinearAttention --------------------------------------------------------------------------------------
BILINEAR_SCORES = "torch.einsum('bqi,ij,bkj->bqk', queries, self.W, keys)"


@variant("q4", replaces=ref.bilinear_attention, name="bilinear score scaled by sqrt(query_size)",
         explain="Your bilinear score is divided by sqrt(query_size), as in scaled dot-product attention: the "
                 "bilinear score q^T W k is not scaled (W can learn any scale), so leave out the division.",
         mutation=[(BILINEAR_SCORES, f"{BILINEAR_SCORES} / math.sqrt(queries.shape[-1])")])
def q4_scaled(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
              W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(queries, np.float64) @ W @ np.asarray(keys, np.float64).transpose(0, 2, 1)
    return attend(scores / np.sqrt(np.shape(queries)[-1]), values, valid_lens)


@variant("q4", replaces=ref.bilinear_attention, name="q^T W^T k: W transposed",
         explain="Your score is q^T W^T k (W created as (key_size, query_size), or used transposed): the "
                 "assignment's W has shape (query_size, key_size) and the score is queries @ self.W @ "
                 "keys.transpose(1, 2).",
         mutation=[("torch.empty(query_size, key_size)", "torch.empty(key_size, query_size)"),
                   (BILINEAR_SCORES, BILINEAR_SCORES.replace("'bqi,ij,bkj->bqk'", "'bqi,ji,bkj->bqk'"))])
def q4_transposed_W(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, valid_lens: np.ndarray | None,
                    W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs only when W is square (query_size == key_size): otherwise the student's code cannot run either, and
    q4.parameter_shape names this mistake from W's shape."""
    scores = np.asarray(queries, np.float64) @ W.T @ np.asarray(keys, np.float64).transpose(0, 2, 1)
    return attend(scores, values, valid_lens)
