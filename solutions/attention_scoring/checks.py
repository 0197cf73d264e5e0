"""Graded checks for attention_scoring. Points: q1 25, q2 30, q3 25, q4 20 (exercises 1 and 3 are read by hand).

Fixed cases come from the seeds (d2l 11.3 and the DS660 answer); random cases draw shapes, values and valid
lengths from the check's seed, which the results record. Every weight is set by the grader through the
parameter names the assignment specifies, so the student's initialisation never matters.
"""

from __future__ import annotations

import numpy as np

from grader.check import Arg, Assignment, CheckContext, Question, StudentObject, WrittenQuestion
from grader.results import HIDDEN

from . import reference_numpy as ref

ASSIGNMENT = Assignment(
    name="attention_scoring",
    title="Attention scoring functions (d2l 11.3)",
    questions=[
        Question("q1", "masked_softmax", defines=("masked_softmax",)),
        Question("q2", "AdditiveAttention", defines=("AdditiveAttention",),
                 graded_with_reference=("masked_softmax",)),
        Question("q3", "DotProductAttention", defines=("DotProductAttention",),
                 graded_with_reference=("masked_softmax",)),
        Question("q4", "BilinearAttention (exercise 2)", defines=("BilinearAttention",),
                 graded_with_reference=("masked_softmax",)),
    ],
    written=[
        WrittenQuestion("ex1", "Modify keys in the toy example and visualize attention weights. Do additive "
                               "attention and scaled dot-product attention still output the same attention weights? "
                               "Why or why not?"),
        WrittenQuestion("ex3", "When queries and keys have the same vector length, is vector summation a better design "
                               "than dot product for the scoring function? Why or why not?"),
    ],
    provided="provided.py",
)
check = ASSIGNMENT.check


# ----- inputs ----------------------------------------------------------------------------------------------------
def valid_lens_for(rng: np.random.Generator, batch: int, queries: int, keys: int, ndim: int) -> np.ndarray | None:
    """Valid lengths in 1..keys (0 would mask every key: the textbook then averages, -inf gives NaN)."""
    if ndim == 0:
        return None
    shape = (batch,) if ndim == 1 else (batch, queries)
    return rng.integers(1, keys + 1, size=shape)


def as_arg(valid: np.ndarray | None) -> Arg:
    return Arg(None) if valid is None else Arg.tensor(valid, "int64")


def toy_inputs(rng: np.random.Generator, query_size: int) -> tuple[np.ndarray, ...]:
    """The textbook's toy example: keys all ones, so the weights are uniform over the valid keys."""
    queries = rng.normal(0, 1, (2, 1, query_size))
    keys = np.ones((2, 10, 2))
    values = np.repeat(np.arange(40, dtype=np.float64).reshape(1, 10, 4), 2, axis=0)
    return queries, keys, values, np.array([2, 6])


# The ranges random checks draw their sizes from ([low, high), as rng.integers). "features" is one size for the
# queries and the keys, "queries_and_keys" one count for both (self-attention).
SIZES = {"batch": (2, 5), "queries": (1, 7), "keys": (2, 10), "queries_and_keys": (2, 10), "query_size": (2, 9),
         "key_size": (2, 9), "features": (2, 9), "value_size": (1, 7), "hiddens": (2, 9)}


def random_sizes(ctx: CheckContext, *names: str) -> dict[str, int]:
    """The named sizes, drawn with ctx.sizes (so a failing check can be run again smaller), in the order given;
    a shared size fills both of the sizes it stands for."""
    sizes = dict(zip(names, ctx.sizes(**{name: SIZES[name] for name in names})))
    if "features" in sizes:
        sizes["query_size"] = sizes["key_size"] = sizes["features"]
    if "queries_and_keys" in sizes:
        sizes["queries"] = sizes["keys"] = sizes["queries_and_keys"]
    return sizes


def forward(ctx: CheckContext, model: StudentObject, name: str, inputs: tuple, valid: np.ndarray | None,
            expected: tuple[np.ndarray, np.ndarray], *, check_weights: bool = True) -> None:
    queries, keys, values = (Arg.tensor(x) for x in inputs)
    output = model(queries, keys, values, as_arg(valid))
    if check_weights:  # first: wrong weights explain a wrong output, and the heatmaps show how
        weights = model.attribute("attention_weights")
        ctx.expect(weights is not None, f"{name} does not store self.attention_weights in forward")
        ctx.expect_tensor(f"{name}.attention_weights", weights, expected[1], attention=True)
    ctx.expect_tensor(f"the output of {name}", output, expected[0])


# ----- q1 masked_softmax -----------------------------------------------------------------------------------------
def expect_masked_softmax(ctx: CheckContext, X: np.ndarray, valid: np.ndarray | None) -> None:
    got = ctx.student.function("masked_softmax")(Arg.tensor(X), as_arg(valid))
    ctx.expect_tensor("masked_softmax(X, valid_lens)", got, ref.masked_softmax(X, valid), attention=True)


@check("q1", points=5, title="textbook example: valid_lens [2, 3] (1-D)")
def q1_textbook_1d(ctx: CheckContext) -> None:
    expect_masked_softmax(ctx, ctx.rng.uniform(size=(2, 2, 4)), np.array([2, 3]))


@check("q1", points=5, title="textbook example: valid_lens [[1, 3], [2, 4]] (2-D, one per query)")
def q1_textbook_2d(ctx: CheckContext) -> None:
    expect_masked_softmax(ctx, ctx.rng.uniform(size=(2, 2, 4)), np.array([[1, 3], [2, 4]]))


@check("q1", points=3, title="valid_lens None: a plain softmax over the last axis")
def q1_no_valid_lens(ctx: CheckContext) -> None:
    expect_masked_softmax(ctx, ctx.rng.normal(size=(2, 3, 5)), None)


def random_masked_softmax(ctx: CheckContext, valid_ndim: int) -> None:
    batch, queries, keys = ctx.sizes(batch=SIZES["batch"], queries=SIZES["queries"], keys=SIZES["keys"])
    X = ctx.rng.normal(0, 3, (batch, queries, keys))
    expect_masked_softmax(ctx, X, valid_lens_for(ctx.rng, batch, queries, keys, valid_ndim))


@check("q1", points=4, visibility=HIDDEN, title="random shapes, 1-D valid_lens")
def q1_random_1d(ctx: CheckContext) -> None:
    random_masked_softmax(ctx, 1)


@check("q1", points=4, visibility=HIDDEN, title="random shapes, 2-D valid_lens")
def q1_random_2d(ctx: CheckContext) -> None:
    random_masked_softmax(ctx, 2)


@check("q1", points=4, visibility=HIDDEN, title="large scores (numerical stability)")
def q1_large_scores(ctx: CheckContext) -> None:
    X = ctx.rng.normal(100, 30, (2, 3, 6))
    expect_masked_softmax(ctx, X, np.array([4, 6]))


# ----- q2 AdditiveAttention --------------------------------------------------------------------------------------
def additive(ctx: CheckContext, *, query_size: int, key_size: int, hiddens: int,
             dropout: float = 0.1) -> tuple[StudentObject, dict[str, np.ndarray]]:
    model = ctx.student.construct("AdditiveAttention", num_hiddens=hiddens, dropout=dropout,
                                  optional={"key_size": key_size, "query_size": query_size})
    weights = {"W_q.weight": ctx.rng.normal(0, 1 / np.sqrt(query_size), (hiddens, query_size)),
               "W_k.weight": ctx.rng.normal(0, 1 / np.sqrt(key_size), (hiddens, key_size)),
               "w_v.weight": ctx.rng.normal(0, 2 / np.sqrt(hiddens), (1, hiddens))}
    model.set_parameters(weights)
    return model, weights


def additive_case(ctx: CheckContext, valid_ndim: int, *, one_size: bool = False) -> None:
    """Random sizes; ``one_size``: queries and keys of one size, where code that swaps W_q and W_k still runs."""
    s = random_sizes(ctx, "batch", "queries", "keys", *(("features",) if one_size else ("query_size", "key_size")),
                     "value_size", "hiddens")
    model, w = additive(ctx, query_size=s["query_size"], key_size=s["key_size"], hiddens=s["hiddens"])
    model.eval()
    inputs = (ctx.rng.normal(size=(s["batch"], s["queries"], s["query_size"])),
              ctx.rng.normal(size=(s["batch"], s["keys"], s["key_size"])),
              ctx.rng.normal(size=(s["batch"], s["keys"], s["value_size"])))
    valid = valid_lens_for(ctx.rng, s["batch"], s["queries"], s["keys"], valid_ndim)
    expected = ref.additive_attention(*inputs, valid, w["W_q.weight"], w["W_k.weight"], w["w_v.weight"])
    forward(ctx, model, "AdditiveAttention", inputs, valid, expected)


@check("q2", points=6, title="toy example: output rows [2, 3, 4, 5] and [10, 11, 12, 13]")
def q2_toy_example(ctx: CheckContext) -> None:
    queries, keys, values, valid = toy_inputs(ctx.rng, 20)
    model, w = additive(ctx, query_size=20, key_size=2, hiddens=8)
    model.eval()
    expected = ref.additive_attention(queries, keys, values, valid, w["W_q.weight"], w["W_k.weight"],
                                      w["w_v.weight"])
    forward(ctx, model, "AdditiveAttention", (queries, keys, values), valid, expected, check_weights=False)


@check("q2", points=4, title="toy example: stores attention_weights, uniform over the valid keys")
def q2_toy_weights(ctx: CheckContext) -> None:
    queries, keys, values, valid = toy_inputs(ctx.rng, 20)
    model, w = additive(ctx, query_size=20, key_size=2, hiddens=8)
    model.eval()
    model(Arg.tensor(queries), Arg.tensor(keys), Arg.tensor(values), as_arg(valid))
    weights = model.attribute("attention_weights")
    ctx.expect(weights is not None, "AdditiveAttention does not store self.attention_weights in forward")
    expected = ref.additive_attention(queries, keys, values, valid, w["W_q.weight"], w["W_k.weight"],
                                      w["w_v.weight"])[1]
    ctx.expect_tensor("AdditiveAttention.attention_weights", weights, expected, attention=True)


@check("q2", points=4, title="parameters: W_q, W_k and w_v without bias")
def q2_parameters(ctx: CheckContext) -> None:
    model, w = additive(ctx, query_size=5, key_size=3, hiddens=4)
    model.eval()
    model(Arg.tensor(np.zeros((1, 2, 5))), Arg.tensor(np.zeros((1, 3, 3))), Arg.tensor(np.zeros((1, 3, 2))),
          Arg(None))
    found = model.parameters()
    extra = sorted(set(found) - set(w))
    ctx.expect(not extra, f"AdditiveAttention has parameters the additive score does not use: {', '.join(extra)} "
                          "(create W_q, W_k and w_v with bias=False)",
               misconception="q2.bias_present" if any(name.endswith(".bias") for name in extra) else None)
    shapes = {name: tuple(value.shape) for name, value in w.items()}
    ctx.expect(all(found.get(name) == shape for name, shape in shapes.items()),
               f"AdditiveAttention's parameter shapes are {found}, expected {shapes}")


@check("q2", points=6, visibility=HIDDEN, title="random shapes, query and key sizes differ, 1-D valid_lens")
def q2_random_1d(ctx: CheckContext) -> None:
    additive_case(ctx, 1)


@check("q2", points=4, visibility=HIDDEN, title="random shapes, 2-D valid_lens, queries and keys of one size")
def q2_random_2d(ctx: CheckContext) -> None:
    additive_case(ctx, 2, one_size=True)


def expect_dropout(ctx: CheckContext, model: StudentObject, name: str, inputs: tuple, valid: np.ndarray, *,
                   misconception: str | None = None) -> None:
    """Eval mode is deterministic and equals the reference; training mode drops weights (dropout=0.5)."""
    args = [Arg.tensor(x) for x in inputs] + [as_arg(valid)]
    model.train()
    first, second = model(*args), model(*args)
    model.eval()
    evaluated = model(*args)
    ctx.expect(first.is_tensor and evaluated.is_tensor, f"{name} should return a torch.Tensor")
    ctx.expect(first.shape == evaluated.shape, f"{name} returns shape {first.shape} in training mode but "
                                               f"{evaluated.shape} in eval mode")
    changed = not (np.allclose(first.array, evaluated.array) and np.allclose(second.array, evaluated.array))
    ctx.expect(changed, f"{name} gives the same output in training and eval mode with dropout=0.5: apply "
                        "self.dropout to the attention weights", misconception=misconception)


def expect_eval_deterministic(ctx: CheckContext, model: StudentObject, name: str, inputs: tuple,
                              valid: np.ndarray, *, misconception: str | None = None) -> None:
    args = [Arg.tensor(x) for x in inputs] + [as_arg(valid)]
    model.eval()
    first, second = model(*args), model(*args)
    ctx.expect(first.is_tensor and second.is_tensor, f"{name} should return a torch.Tensor")
    ctx.expect(np.array_equal(first.array, second.array),
               f"{name} gives different outputs for the same inputs in eval mode: dropout must only act in "
               "training mode (use self.dropout, an nn.Dropout, not F.dropout(..., training=True))",
               misconception=misconception)


def dropout_inputs(ctx: CheckContext, query_size: int, key_size: int) -> tuple[tuple, np.ndarray]:
    inputs = (ctx.rng.normal(size=(2, 4, query_size)), ctx.rng.normal(size=(2, 6, key_size)),
              ctx.rng.normal(size=(2, 6, 3)))
    return inputs, np.array([5, 6])


@check("q2", points=3, title="eval mode is deterministic (dropout off)")
def q2_eval_deterministic(ctx: CheckContext) -> None:
    model, _ = additive(ctx, query_size=4, key_size=3, hiddens=5, dropout=0.5)
    expect_eval_deterministic(ctx, model, "AdditiveAttention", *dropout_inputs(ctx, 4, 3),
                              misconception="q2.dropout_in_eval")


@check("q2", points=3, title="dropout acts in training mode")
def q2_dropout_in_training(ctx: CheckContext) -> None:
    model, _ = additive(ctx, query_size=4, key_size=3, hiddens=5, dropout=0.5)
    expect_dropout(ctx, model, "AdditiveAttention", *dropout_inputs(ctx, 4, 3), misconception="q2.no_dropout")


# ----- q3 DotProductAttention ------------------------------------------------------------------------------------
def dot_case(ctx: CheckContext, valid_ndim: int, *, omit_valid_lens: bool = False, square: bool = False) -> None:
    """Random sizes; ``square``: as many queries as keys (self-attention), where code that swaps them still runs."""
    s = random_sizes(ctx, "batch", *(("queries_and_keys",) if square else ("queries", "keys")), "features",
                     "value_size")
    model = ctx.student.construct("DotProductAttention", dropout=0.1)
    model.eval()
    d = s["features"]
    inputs = (ctx.rng.normal(size=(s["batch"], s["queries"], d)), ctx.rng.normal(size=(s["batch"], s["keys"], d)),
              ctx.rng.normal(size=(s["batch"], s["keys"], s["value_size"])))
    valid = valid_lens_for(ctx.rng, s["batch"], s["queries"], s["keys"], valid_ndim)
    expected = ref.dot_product_attention(*inputs, valid)
    if omit_valid_lens:
        output = model(*(Arg.tensor(x) for x in inputs))
        ctx.expect_tensor("the output of DotProductAttention called without valid_lens", output, expected[0])
        return
    forward(ctx, model, "DotProductAttention", inputs, valid, expected)


@check("q3", points=5, title="toy example: output rows [2, 3, 4, 5] and [10, 11, 12, 13]")
def q3_toy_example(ctx: CheckContext) -> None:
    queries, keys, values, valid = toy_inputs(ctx.rng, 2)
    model = ctx.student.construct("DotProductAttention", dropout=0.5)
    model.eval()
    expected = ref.dot_product_attention(queries, keys, values, valid)
    forward(ctx, model, "DotProductAttention", (queries, keys, values), valid, expected, check_weights=False)


@check("q3", points=3, title="toy example: stores attention_weights, uniform over the valid keys")
def q3_toy_weights(ctx: CheckContext) -> None:
    queries, keys, values, valid = toy_inputs(ctx.rng, 2)
    model = ctx.student.construct("DotProductAttention", dropout=0.5)
    model.eval()
    model(Arg.tensor(queries), Arg.tensor(keys), Arg.tensor(values), as_arg(valid))
    weights = model.attribute("attention_weights")
    ctx.expect(weights is not None, "DotProductAttention does not store self.attention_weights in forward")
    expected = ref.dot_product_attention(queries, keys, values, valid)[1]
    ctx.expect_tensor("DotProductAttention.attention_weights", weights, expected, attention=True)


@check("q3", points=3, title="valid_lens omitted (defaults to None)")
def q3_no_valid_lens(ctx: CheckContext) -> None:
    dot_case(ctx, 0, omit_valid_lens=True)


@check("q3", points=5, visibility=HIDDEN, title="random shapes, 1-D valid_lens, scaled by sqrt(d)")
def q3_random_1d(ctx: CheckContext) -> None:
    dot_case(ctx, 1)


@check("q3", points=4, visibility=HIDDEN, title="random shapes, 2-D valid_lens, as many queries as keys")
def q3_random_2d(ctx: CheckContext) -> None:
    dot_case(ctx, 2, square=True)


@check("q3", points=2, title="eval mode is deterministic (dropout off)")
def q3_eval_deterministic(ctx: CheckContext) -> None:
    model = ctx.student.construct("DotProductAttention", dropout=0.5)
    expect_eval_deterministic(ctx, model, "DotProductAttention", *dropout_inputs(ctx, 4, 4),
                              misconception="q3.dropout_in_eval")


@check("q3", points=3, title="dropout acts in training mode")
def q3_dropout_in_training(ctx: CheckContext) -> None:
    model = ctx.student.construct("DotProductAttention", dropout=0.5)
    expect_dropout(ctx, model, "DotProductAttention", *dropout_inputs(ctx, 4, 4), misconception="q3.no_dropout")


# ----- q4 BilinearAttention --------------------------------------------------------------------------------------
def bilinear(ctx: CheckContext, query_size: int, key_size: int) -> tuple[StudentObject, np.ndarray]:
    model = ctx.student.construct("BilinearAttention", query_size=query_size, key_size=key_size, dropout=0.1)
    W = ctx.rng.normal(0, 2 / np.sqrt(query_size * key_size), (query_size, key_size))
    model.set_parameters({"W": W})
    model.eval()
    return model, W


def bilinear_case(ctx: CheckContext, sizes: dict[str, int], valid: np.ndarray | None) -> None:
    model, W = bilinear(ctx, sizes["query_size"], sizes["key_size"])
    inputs = (ctx.rng.normal(size=(sizes["batch"], sizes["queries"], sizes["query_size"])),
              ctx.rng.normal(size=(sizes["batch"], sizes["keys"], sizes["key_size"])),
              ctx.rng.normal(size=(sizes["batch"], sizes["keys"], sizes["value_size"])))
    forward(ctx, model, "BilinearAttention", inputs, valid, ref.bilinear_attention(*inputs, valid, W))


@check("q4", points=4, title="parameter W of shape (query_size, key_size)")
def q4_parameter_shape(ctx: CheckContext) -> None:
    model = ctx.student.construct("BilinearAttention", query_size=5, key_size=3, dropout=0.1)
    found = model.parameters()
    ctx.expect("W" in found, f"BilinearAttention has no parameter named W (it has: {', '.join(found) or 'none'})")
    ctx.expect(found["W"] == (5, 3), f"BilinearAttention.W has shape {found['W']}, expected (query_size, key_size)"
                                     " = (5, 3)", misconception="q4.transposed_W" if found["W"] == (3, 5) else None)


@check("q4", points=6, title="queries of size 5 against keys of size 3, valid_lens [2, 4]")
def q4_fixed_case(ctx: CheckContext) -> None:
    sizes = {"batch": 2, "queries": 3, "keys": 4, "query_size": 5, "key_size": 3, "value_size": 2}
    bilinear_case(ctx, sizes, np.array([2, 4]))


def random_bilinear(ctx: CheckContext, valid_ndim: int) -> None:
    s = random_sizes(ctx, "batch", "queries", "keys", "query_size", "key_size", "value_size")
    bilinear_case(ctx, s, valid_lens_for(ctx.rng, s["batch"], s["queries"], s["keys"], valid_ndim))


@check("q4", points=5, visibility=HIDDEN, title="random shapes, 1-D valid_lens")
def q4_random_1d(ctx: CheckContext) -> None:
    random_bilinear(ctx, 1)


@check("q4", points=5, visibility=HIDDEN, title="random shapes, 2-D valid_lens")
def q4_random_2d(ctx: CheckContext) -> None:
    random_bilinear(ctx, 2)
