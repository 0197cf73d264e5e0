"""Known mistakes in bahdanau_attention, each as the reference would compute it (or, for a mistake no computation
shows, named by the check that recognises it), with the student-facing explanation and the edit that puts it into
the model solution (tests/submissions/bahdanau_attention/reference_style.py) for the mutation test.

q2 and q3 are graded with the reference AdditiveAttention, so their mistakes are about the heads and the chunking.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import reference_numpy as ref
from .checks import ASSIGNMENT

variant = ASSIGNMENT.variant
misconception = ASSIGNMENT.misconception

Params = dict[str, np.ndarray]

# The model solution's lines that the mutations edit.
SCORES = "attention_weights = torch.softmax(self.energy_layer(energy).reshape(-1), dim=0)  # (n,)"
ENERGY = "energy = torch.tanh(self.query_layer(query) + self.key_layer(key))  # (n, hidden_dim)"
CHUNKED_BODY = """    q = attention.query_layer(query)
    scores = torch.empty(key.shape[0])
    running_max, total = torch.tensor(float("-inf")), torch.tensor(0.0)
    acc = torch.zeros(value.shape[1])
    for start in range(0, key.shape[0], chunk_size):
        chunk = attention.energy_layer(torch.tanh(q + attention.key_layer(key[start:start + chunk_size]))).reshape(-1)
        scores[start:start + chunk_size] = chunk
        new_max = torch.maximum(running_max, chunk.max())
        rescale, exp = torch.exp(running_max - new_max), torch.exp(chunk - new_max)
        total = total * rescale + exp.sum()
        acc = acc * rescale + exp @ value[start:start + chunk_size]
        running_max = new_max
    return acc / total, torch.exp(scores - running_max) / total
"""


# ----- q1 AdditiveAttention --------------------------------------------------------------------------------------
def hidden(query: np.ndarray, key: np.ndarray, p: Params, *, activation: Callable[[np.ndarray], np.ndarray] = np.tanh,
           query_layer: str = "query_layer", key_layer: str = "key_layer") -> np.ndarray:
    """activation(query_layer(query) + key_layer(key)): shape (n, hidden_dim)."""
    q = query.astype(np.float64).reshape(1, -1) @ p[f"{query_layer}.weight"].T + p[f"{query_layer}.bias"]
    k = key.astype(np.float64) @ p[f"{key_layer}.weight"].T + p[f"{key_layer}.bias"]
    return activation(q + k)


def energy_layer(h: np.ndarray, p: Params) -> np.ndarray:
    return (h @ p["energy_layer.weight"].T)[:, 0] + p["energy_layer.bias"][0]


def identity(x: np.ndarray) -> np.ndarray:
    return x


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def weighted(weights: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return weights @ value.astype(np.float64), weights


@variant("q1", replaces=ref.additive_attention, name="softmax over the hidden axis",
         explain="Your softmax runs over the hidden_dim features of tanh(...), before energy_layer: the weights must "
                 "be a softmax over the n keys. Apply energy_layer first, then torch.softmax of its n scores "
                 "(reshape(-1), dim=0).",
         mutation=[(SCORES, "attention_weights = self.energy_layer(torch.softmax(energy, dim=-1)).reshape(-1)")])
def q1_softmax_hidden_axis(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                           p: Params) -> tuple[np.ndarray, np.ndarray]:
    h = hidden(query, key, p)
    h = np.exp(h - h.max(axis=-1, keepdims=True))
    return weighted(energy_layer(h / h.sum(axis=-1, keepdims=True), p), value)


@variant("q1", replaces=ref.additive_attention, name="softmax over the size-1 score axis",
         explain="Your weights are all 1, as a softmax over the last axis of the (n, 1) scores gives (it has one "
                 "entry): flatten the scores to (n,) first (reshape(-1)) and take the softmax over the keys, dim=0.",
         mutation=[(SCORES, "attention_weights = torch.softmax(self.energy_layer(energy), dim=-1).reshape(-1)")])
def q1_softmax_size_one_axis(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                             p: Params) -> tuple[np.ndarray, np.ndarray]:
    return weighted(np.ones(key.shape[0]), value)


@variant("q1", replaces=ref.additive_attention, name="no tanh",
         explain="Your energy is query_layer(query) + key_layer(key) without the tanh: the additive score is "
                 "energy_layer(torch.tanh(query_layer(query) + key_layer(key))).",
         mutation=[(ENERGY, "energy = self.query_layer(query) + self.key_layer(key)")])
def q1_no_tanh(query: np.ndarray, key: np.ndarray, value: np.ndarray, p: Params) -> tuple[np.ndarray, np.ndarray]:
    return weighted(ref.softmax(energy_layer(hidden(query, key, p, activation=identity), p)), value)


@variant("q1", replaces=ref.additive_attention, name="relu instead of tanh",
         explain="Your energy uses relu where additive (Bahdanau) attention uses tanh: "
                 "energy_layer(torch.tanh(query_layer(query) + key_layer(key))).",
         mutation=[(ENERGY, "energy = torch.relu(self.query_layer(query) + self.key_layer(key))")])
def q1_relu_for_tanh(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                     p: Params) -> tuple[np.ndarray, np.ndarray]:
    return weighted(ref.softmax(energy_layer(hidden(query, key, p, activation=relu), p)), value)


@variant("q1", replaces=ref.additive_attention, name="query_layer and key_layer swapped",
         explain="Your code applies key_layer to the query and query_layer to the keys: the query goes through "
                 "query_layer and the keys through key_layer, tanh(query_layer(query) + key_layer(key)).",
         mutation=[(ENERGY, "energy = torch.tanh(self.key_layer(query) + self.query_layer(key))")])
def q1_query_key_layers_swapped(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                                p: Params) -> tuple[np.ndarray, np.ndarray]:
    h = hidden(query, key, p, query_layer="key_layer", key_layer="query_layer")
    return weighted(ref.softmax(energy_layer(h, p)), value)


# Named by the checks themselves (solutions/bahdanau_attention/checks.py): no reference computation shows them.
misconception("q1", "squeeze", name=".squeeze() makes one key's weights 0-d",
              explain="Your .squeeze() turns the (1, 1) scores of a single key into a 0-d tensor, which the weighted "
                      "sum cannot use: flatten them with reshape(-1) (or squeeze(-1)), so that the weights have shape "
                      "(n,) for n = 1 too.",
              mutation=[(SCORES, "attention_weights = torch.softmax(self.energy_layer(energy).squeeze(), dim=0)")])

misconception("q1", "energy_without_bias", name="energy_layer without bias",
              explain="Your energy_layer has no bias (bias=False). It does not change the softmax, but the assignment "
                      "asks for nn.Linear(hidden_dim, 1) with its bias (the default), and the grader sets it.",
              mutation=[("self.energy_layer = nn.Linear(hidden_dim, 1)\n\n",
                         "self.energy_layer = nn.Linear(hidden_dim, 1, bias=False)\n\n")])

misconception("q1", "layers_without_bias", name="query_layer or key_layer without bias",
              explain="Your query_layer or key_layer has no bias (bias=False): the score is "
                      "w·tanh(W_q q + b_q + W_k k + b_k) + b, so build every layer with its bias, "
                      "nn.Linear(input_dim, hidden_dim) (the default).",
              mutation=[("        self.key_layer = nn.Linear(input_dim, hidden_dim)\n        self.energy_layer",
                         "        self.key_layer = nn.Linear(input_dim, hidden_dim, bias=False)\n"
                         "        self.energy_layer")])


# ----- q2 MultiHeadAdditiveAttention -----------------------------------------------------------------------------
misconception("q2", "mean_of_heads", name="heads averaged, not concatenated",
              explain="Your heads' weighted sums are merged into one input_dim vector (averaged or added) before "
                      "out_layer: concatenate them (torch.cat) and make out_layer "
                      "nn.Linear(num_heads * input_dim, input_dim).",
              mutation=[("self.out_layer = nn.Linear(num_heads * input_dim, input_dim)",
                         "self.out_layer = nn.Linear(input_dim, input_dim)"),
                        ("return self.out_layer(torch.cat(sums)), torch.stack(weights)",
                         "return self.out_layer(torch.stack(sums).mean(0)), torch.stack(weights)")])


@variant("q2", replaces=ref.multi_head_attention, name="out_layer not applied",
         explain="Your output is the heads' weighted sums concatenated, without out_layer: pass the concatenation "
                 "through self.out_layer, which mixes the heads back to input_dim features.",
         mutation=[("return self.out_layer(torch.cat(sums)), torch.stack(weights)",
                    "return torch.cat(sums), torch.stack(weights)")])
def q2_no_out_layer(query: np.ndarray, key: np.ndarray, value: np.ndarray, heads: list[Params],
                    out: Params) -> tuple[np.ndarray, np.ndarray]:
    sums, weights = zip(*(ref.additive_attention(query, key, value, head) for head in heads))
    return np.concatenate(sums), np.stack(weights)


# ----- q3 chunked_additive_attention -----------------------------------------------------------------------------
# Named by the checks: the reference they call is not given the chunk size (softmax_per_chunk), and running out
# of memory shows in no value (unchunked).
misconception("q3", "softmax_per_chunk", name="softmax within each chunk",
              explain="Your weights are a softmax within each chunk, the chunks' results averaged: the softmax is over "
                      "all n keys. Keep a running maximum m and sum across chunks (online softmax), rescaling by "
                      "exp(m - m') when the maximum grows.",
              mutation=[(CHUNKED_BODY, """    sums, weights = [], []
    for start in range(0, key.shape[0], chunk_size):
        s, w = attention(query, key[start:start + chunk_size], value[start:start + chunk_size])
        sums.append(s)
        weights.append(w / ((key.shape[0] + chunk_size - 1) // chunk_size))
    return torch.stack(sums).mean(0), torch.cat(weights)
""")])

misconception("q3", "unchunked", name="not chunked: an (n, hidden_dim) tensor",
              explain="Your chunked_additive_attention puts all n keys through the layers at once, an (n, hidden_dim) "
                      "tensor that runs out of memory for a million keys: apply them to key[start:start + chunk_size] "
                      "one chunk at a time.",
              mutation=[(CHUNKED_BODY, "    return attention(query, key, value)\n")])
