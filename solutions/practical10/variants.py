"""Known mistakes in practical10, each as the reference would compute it, with the student-facing explanation and the
edit that puts it into the model solution (tests/submissions/practical10/reference_style.py) for the mutation test."""

from __future__ import annotations

import numpy as np

from . import reference_numpy as ref
from .checks import ASSIGNMENT, W_K, W_Q, W_V, X

variant = ASSIGNMENT.variant


REFERENCE_SELF_ATTENTION = """    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / np.sqrt(K.shape[1])
    A = np.exp(scores - scores.max(axis=1, keepdims=True))
    A = A / A.sum(axis=1, keepdims=True)
    return Q, K, V, A, A @ V"""
TYPED_SELF_ATTENTION = """    Q = np.array([[-2.25, 4.5], [1.25, 2.0], [-1.25, 4.75], [-2.75, -3.5]])
    K = np.array([[5.75, 1.5], [2.0, -0.5], [4.5, 2.0], [-2.5, 0.5]])
    V = np.array([[-2.5, -7.5], [0.25, 0.0], [-2.0, -5.25], [-0.75, -1.5]])
    A = np.array([[0.0, 0.0, 0.0017, 0.9982],
                  [0.5973, 0.0013, 0.4013, 0.0001],
                  [0.0146, 0.0005, 0.2370, 0.7478],
                  [0.0, 0.0019, 0.0, 0.9981]])
    Z = np.array([[-0.7522, -1.5067], [-2.2956, -6.5869], [-1.0714, -2.4760], [-0.7481, -1.4972]])
    return Q, K, V, A, Z"""


# ----- q1 scaled_dot_product_attention ---------------------------------------------------------------------------
@variant("q1", replaces=ref.scaled_dot_product_attention, name="scores not scaled by sqrt(d)",
         explain="Your scores are the plain dot products x_i . q: scaled dot-product attention divides them by "
                 "sqrt(d), d the size of the vectors (3 here), before the softmax.",
         mutation=[("    scores = X @ q / np.sqrt(X.shape[1])\n", "    scores = X @ q\n")])
def q1_unscaled(q: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = ref.softmax(X @ q)
    return p, X.T @ p


# ----- q2 self_attention -----------------------------------------------------------------------------------------
def attention_parts(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray):
    return X @ W_Q, X @ W_K, X @ W_V


@variant("q2", replaces=ref.self_attention, name="the practical's numbers typed in",
         explain="Your self_attention returns the practical's answers for other inputs too, as if they were typed "
                 "in: compute Q, K, V, A and Z from X, W_Q, W_K and W_V, so that it works for any matrices.",
         mutation=[(REFERENCE_SELF_ATTENTION, TYPED_SELF_ATTENTION)])
def q2_typed_numbers(X_: np.ndarray, W_Q_: np.ndarray, W_K_: np.ndarray, W_V_: np.ndarray) -> tuple:
    return tuple(np.round(value, 4) for value in ref.self_attention.__wrapped__(X, W_Q, W_K, W_V))


@variant("q2", replaces=ref.self_attention, name="attention map normalised by column",
         explain="Your attention map A is a softmax over each column (the queries): each row must be a distribution "
                 "over the positions attended to, a softmax along axis 1 (the keys).",
         mutation=[("""    A = np.exp(scores - scores.max(axis=1, keepdims=True))
    A = A / A.sum(axis=1, keepdims=True)""", """    A = np.exp(scores - scores.max(axis=0, keepdims=True))
    A = A / A.sum(axis=0, keepdims=True)""")])
def q2_column_softmax(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray) -> tuple:
    Q, K, V = attention_parts(X, W_Q, W_K, W_V)
    A = ref.softmax(Q @ K.T / np.sqrt(K.shape[1]), axis=0)
    return Q, K, V, A, A @ V


@variant("q2", replaces=ref.self_attention, name="scores not scaled by sqrt(d_k)",
         explain="Your scores are Q K^T without the scale: divide by sqrt(d_k), d_k the size of the keys (the "
                 "columns of W_K), before the softmax.",
         mutation=[("    scores = Q @ K.T / np.sqrt(K.shape[1])\n", "    scores = Q @ K.T\n")])
def q2_unscaled(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray) -> tuple:
    Q, K, V = attention_parts(X, W_Q, W_K, W_V)
    A = ref.softmax(Q @ K.T)
    return Q, K, V, A, A @ V


@variant("q2", replaces=ref.self_attention, name="scaled by the input size d instead of d_k",
         explain="Your scores are divided by sqrt(d), the size of the input vectors: scaled dot-product attention "
                 "divides by sqrt(d_k), the size of the queries and keys (K.shape[1]).",
         mutation=[("    scores = Q @ K.T / np.sqrt(K.shape[1])\n", "    scores = Q @ K.T / np.sqrt(X.shape[1])\n")])
def q2_scaled_by_input_size(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray) -> tuple:
    Q, K, V = attention_parts(X, W_Q, W_K, W_V)
    A = ref.softmax(Q @ K.T / np.sqrt(X.shape[1]))
    return Q, K, V, A, A @ V


# ----- q3 multi_head_attention -----------------------------------------------------------------------------------
def head_outputs(X: np.ndarray, heads: list) -> list[np.ndarray]:
    return [ref.self_attention(X, *head)[4] for head in heads]


@variant("q3", replaces=ref.multi_head_attention, name="W_O not applied",
         explain="Your Z is the heads' outputs side by side, [Z_1, Z_2]: multi-head attention then multiplies them by "
                 "W_O, which mixes the heads into the output.",
         mutation=[("    return np.concatenate(outputs, axis=1) @ W_O", "    return np.concatenate(outputs, axis=1)")])
def q3_no_output_projection(X: np.ndarray, heads: list, W_O: np.ndarray) -> np.ndarray:
    return np.concatenate(head_outputs(X, heads), axis=1)


@variant("q3", replaces=ref.multi_head_attention, name="heads added instead of concatenated",
         explain="Your code adds the heads' outputs: place them side by side, [Z_1, Z_2, ...] along the features "
                 "(np.concatenate(..., axis=1)), then multiply by the whole W_O.",
         mutation=[("    return np.concatenate(outputs, axis=1) @ W_O",
                    "    return sum(outputs) @ W_O[:outputs[0].shape[1]]")])
def q3_heads_added(X: np.ndarray, heads: list, W_O: np.ndarray) -> np.ndarray:
    outputs = head_outputs(X, heads)
    return sum(outputs) @ W_O[:outputs[0].shape[1]]


# ----- q4 DotProdAttention ---------------------------------------------------------------------------------------
def attend(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None, *, scale: float = 1.0,
           axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    scores = query @ context.transpose(0, 2, 1) / scale
    if mask is not None:
        scores = np.where(mask[:, None, :], scores, -np.inf)
    with np.errstate(invalid="ignore"):
        weights = ref.softmax(scores, axis=axis)
    return weights, weights @ context


@variant("q4", replaces=ref.dot_prod_attention, name="padding not masked",
         explain="Your weights give padded source positions a share: set their scores to -inf (masked_fill(~mask, "
                 "float('-inf')), mask broadcast over the target steps) before the softmax, so they get weight 0.",
         mutation=[("""        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
""", "")])
def q4_padding_not_masked(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
                          W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return ref.dot_prod_attention.__wrapped__(query, context, None, W_c)


@variant("q4", replaces=ref.dot_prod_attention, name="[s_t; c_t] instead of [c_t; s_t]",
         explain="Your W_c is applied to [s_t; c_t], the decoder state first: the practical concatenates the context "
                 "first, tanh(W_c [c_t; s_t]): torch.cat([c, query], dim=-1).",
         mutation=[("torch.cat([contexts, query], dim=-1)", "torch.cat([query, contexts], dim=-1)")])
def q4_state_first(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
                   W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    weights, contexts = attend(query, context, mask)
    return np.tanh(np.concatenate([query, contexts], axis=-1) @ W_c.T), weights


@variant("q4", replaces=ref.dot_prod_attention, name="softmax over the target steps",
         explain="Your weights are a softmax over the target steps (dim=1): each step's weights must be a "
                 "distribution over the source positions, softmax(..., dim=-1).",
         mutation=[("weights = torch.softmax(scores, dim=-1)", "weights = torch.softmax(scores, dim=1)")])
def q4_softmax_over_steps(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
                          W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    weights, contexts = attend(query, context, mask, axis=1)
    return np.tanh(np.concatenate([contexts, query], axis=-1) @ W_c.T), weights


@variant("q4", replaces=ref.dot_prod_attention, name="scores scaled by sqrt(H)",
         explain="Your scores are divided by sqrt(hidden_size): the practical's dot-product attention is unscaled, "
                 "z_ts = s_t . h_s.",
         mutation=[("scores = query @ context.transpose(1, 2)", "scores = query @ context.transpose(1, 2) / "
                                                                "query.shape[-1] ** 0.5")])
def q4_scaled(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
              W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    weights, contexts = attend(query, context, mask, scale=np.sqrt(query.shape[-1]))
    return np.tanh(np.concatenate([contexts, query], axis=-1) @ W_c.T), weights


@variant("q4", replaces=ref.dot_prod_attention, name="no tanh",
         explain="Your output is W_c [c_t; s_t] without the tanh: the attentional state is tanh(W_c [c_t; s_t]).",
         mutation=[("return torch.tanh(self.W_c(torch.cat([contexts, query], dim=-1))), weights",
                    "return self.W_c(torch.cat([contexts, query], dim=-1)), weights")])
def q4_no_tanh(query: np.ndarray, context: np.ndarray, mask: np.ndarray | None,
               W_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    weights, contexts = attend(query, context, mask)
    return np.concatenate([contexts, query], axis=-1) @ W_c.T, weights

