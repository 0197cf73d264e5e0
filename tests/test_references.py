"""The float64 NumPy reference and the PyTorch reference agree, and both reproduce the textbook's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from grader.check import load_solution_module

ref_np = load_solution_module("attention_scoring", "reference_numpy")
ref_torch = load_solution_module("attention_scoring", "reference_torch")


def random_valid(rng: np.random.Generator, batch: int, queries: int, keys: int, ndim: int) -> np.ndarray | None:
    if ndim == 0:
        return None
    return rng.integers(1, keys + 1, size=(batch,) if ndim == 1 else (batch, queries))


def t(array: np.ndarray | None) -> torch.Tensor | None:
    return None if array is None else torch.from_numpy(np.asarray(array))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ndim", [0, 1, 2])
def test_masked_softmax_agrees(seed: int, ndim: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 3, (3, 4, 6))
    valid = random_valid(rng, 3, 4, 6, ndim)
    expected = ref_np.masked_softmax(X, valid)
    np.testing.assert_allclose(ref_torch.masked_softmax(t(X), t(valid)).numpy(), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(expected.sum(-1), 1.0)
    if valid is not None:
        lens = valid if valid.ndim == 2 else np.repeat(valid[:, None], 4, axis=1)
        beyond = np.arange(6)[None, None, :] >= lens[:, :, None]
        assert np.all(expected[beyond] == 0.0)


def test_masked_softmax_textbook_pattern() -> None:
    """d2l 11.3: with valid_lens [[1, 3], [2, 4]] the zeros sit exactly where the book shows them."""
    weights = ref_np.masked_softmax(np.random.default_rng(0).uniform(size=(2, 2, 4)), np.array([[1, 3], [2, 4]]))
    assert (weights > 0).tolist() == [[[True, False, False, False], [True, True, True, False]],
                                      [[True, True, False, False], [True, True, True, True]]]
    assert weights[0, 0, 0] == 1.0


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ndim", [0, 1, 2])
def test_attention_modules_agree(seed: int, ndim: int) -> None:
    rng = np.random.default_rng(seed)
    b, n, m, q, k, v, h = 2, 3, 5, 4, 6, 3, 7
    queries, keys, values = rng.normal(size=(b, n, q)), rng.normal(size=(b, m, k)), rng.normal(size=(b, m, v))
    valid = random_valid(rng, b, n, m, ndim)
    W_q, W_k, w_v = rng.normal(size=(h, q)), rng.normal(size=(h, k)), rng.normal(size=(1, h))

    additive = ref_torch.AdditiveAttention(num_hiddens=h, dropout=0.3).double().eval()
    additive(t(queries), t(keys), t(values), t(valid))  # materialise the lazy layers
    with torch.no_grad():
        for layer, weight in ((additive.W_q, W_q), (additive.W_k, W_k), (additive.w_v, w_v)):
            layer.weight.copy_(t(weight))
        out = additive(t(queries), t(keys), t(values), t(valid))
    expected = ref_np.additive_attention(queries, keys, values, valid, W_q, W_k, w_v)
    np.testing.assert_allclose(out.numpy(), expected[0], rtol=1e-10)
    np.testing.assert_allclose(additive.attention_weights.numpy(), expected[1], rtol=1e-10, atol=1e-15)

    dot = ref_torch.DotProductAttention(dropout=0.3).eval()
    keys_d = rng.normal(size=(b, m, q))
    expected = ref_np.dot_product_attention(queries, keys_d, values, valid)
    np.testing.assert_allclose(dot(t(queries), t(keys_d), t(values), t(valid)).numpy(), expected[0], rtol=1e-10)

    bilinear = ref_torch.BilinearAttention(query_size=q, key_size=k, dropout=0.3).double().eval()
    W = rng.normal(size=(q, k))
    with torch.no_grad():
        bilinear.W.copy_(t(W))
        out = bilinear(t(queries), t(keys), t(values), t(valid))
    np.testing.assert_allclose(out.numpy(), ref_np.bilinear_attention(queries, keys, values, valid, W)[0], rtol=1e-10)


def test_toy_example_rows() -> None:
    """Seed 000 / d2l 11.3: keys all ones, valid_lens [2, 6] -> output rows [2, 3, 4, 5] and [10, 11, 12, 13]."""
    rng = np.random.default_rng(1)
    queries, keys = rng.normal(size=(2, 1, 20)), np.ones((2, 10, 2))
    values = np.repeat(np.arange(40.0).reshape(1, 10, 4), 2, axis=0)
    output, weights = ref_np.additive_attention(queries, keys, values, np.array([2, 6]), rng.normal(size=(8, 20)),
                                                rng.normal(size=(8, 2)), rng.normal(size=(1, 8)))
    np.testing.assert_allclose(output[:, 0], [[2, 3, 4, 5], [10, 11, 12, 13]])
    np.testing.assert_allclose(weights[1, 0, :6], 1 / 6)
    output, _ = ref_np.dot_product_attention(rng.normal(size=(2, 1, 2)), keys, values, np.array([2, 6]))
    np.testing.assert_allclose(output[:, 0], [[2, 3, 4, 5], [10, 11, 12, 13]])
