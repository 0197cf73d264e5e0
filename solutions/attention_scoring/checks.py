"""Graded checks for attention_scoring. Points: q1 25, q2 30, q3 25, q4 20 (exercises 1 and 3 are read by hand).

Fixed cases come from the seeds (d2l 11.3 and the DS660 answer); random cases draw shapes, values and valid
lengths from the check's seed, which the results record. Every weight is set by the grader through the
parameter names the assignment specifies (or, for a module that names them otherwise, where the grader's naming rule
binds them: q2.parameters and q4.parameter_shape then ask for the names), so the student's initialisation never
matters.

Every random check draws a generic case, so that each known mistake fails it for every student: every size at
least 2, the sizes that code could confuse distinct (batch, queries and keys; query, key and value sizes and the
hidden size), some keys masked, and 2-D valid lengths that differ between an example's queries and read differently
row by row and column by column.
"""

from __future__ import annotations

import numpy as np

from grader.check import HIDDEN, Arg, Assignment, CheckContext, Question, Returned, StudentObject, WrittenQuestion

from . import reference_numpy as ref

CONVENTION = ("the assignment's modules take batches: queries (batch, queries, query_size), keys (batch, keys, "
              "key_size), values (batch, keys, value_size) and valid_lens None, (batch,) or (batch, queries)")

ASSIGNMENT = Assignment(
    name="attention_scoring",
    title="Attention scoring functions (d2l 11.3)",
    questions=[
        Question("q1", "masked_softmax", defines=("masked_softmax",)),
        Question("q2", "AdditiveAttention", defines=("AdditiveAttention",),
                 graded_with_reference=("masked_softmax",), convention=CONVENTION),
        Question("q3", "DotProductAttention", defines=("DotProductAttention",),
                 graded_with_reference=("masked_softmax",), convention=CONVENTION),
        Question("q4", "BilinearAttention (exercise 2)", defines=("BilinearAttention",),
                 graded_with_reference=("masked_softmax",), convention=CONVENTION),
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
    """Valid lengths in 1..keys (0 would mask every key: the textbook then averages, -inf gives NaN), made generic
    where the sizes allow: some key masked (else a wrong mask passes) and some query with more than one key to weigh
    (else every weight is 1 or 0, whatever the scores); with 2-D lengths, an example whose queries have different
    lengths (else one length per example passes) and lengths that read differently row by row and column by column
    (else a transposed layout passes). The adjustments draw nothing, so the stream stays put."""
    if ndim == 0:
        return None
    shape = (batch,) if ndim == 1 else (batch, queries)
    valid = rng.integers(1, keys + 1, size=shape)
    if keys < 2:
        return valid
    if (valid == keys).all():
        valid.flat[0] = keys - 1
    if (valid == 1).all():
        valid.flat[-1] = keys
    if ndim == 2 and queries > 1:
        if (valid[0] == valid[0, 0]).all():
            valid[0, 1] = valid[0, 0] % keys + 1
        if batch > 1 and np.array_equal(valid.reshape(-1), valid.T.reshape(-1)):
            valid[-1, 0] = valid[-1, 0] % keys + 1
    return valid


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
SIZES = {"batch": (2, 5), "queries": (2, 7), "keys": (2, 10), "queries_and_keys": (2, 10), "query_size": (2, 10),
         "key_size": (2, 10), "features": (2, 10), "value_size": (2, 8), "hiddens": (2, 10)}
# Sizes code could confuse (a reshape by the wrong one, keys and queries swapped, W_q applied to the keys, no
# projection at all) run and fail by chance when equal: each group is drawn distinct.
DISTINCT = (("batch", "queries", "keys", "queries_and_keys"), ("query_size", "key_size", "features", "value_size",
                                                                "hiddens"))


def random_sizes(ctx: CheckContext, *names: str) -> dict[str, int]:
    """The named sizes, drawn with ctx.sizes (so a failing check can be run again smaller), in the order given,
    each group of DISTINCT pairwise distinct; a shared size fills both of the sizes it stands for."""
    groups = [tuple(name for name in group if name in names) for group in DISTINCT]
    sizes = dict(zip(names, ctx.sizes(**{name: SIZES[name] for name in names},
                                      distinct=[group for group in groups if len(group) > 1])))
    if "features" in sizes:
        sizes["query_size"] = sizes["key_size"] = sizes["features"]
    if "queries_and_keys" in sizes:
        sizes["queries"] = sizes["keys"] = sizes["queries_and_keys"]
    return sizes


# The checks that ask for the attention weights a module keeps: elsewhere, weights not kept cost nothing.
KEEPS_WEIGHTS = "toy example: stores attention_weights, uniform over the valid keys"


# The axes of what the modules return, by the sizes name_inputs names.
WEIGHTS_AXES = ("batch", "queries", "keys")
OUTPUT_AXES = ("batch", "queries", "value_size")


def name_inputs(ctx: CheckContext, queries: np.ndarray, keys: np.ndarray, values: np.ndarray) -> None:
    """Name the sizes of a module's inputs, so that an answer of another shape is told axis by axis."""
    ctx.name_sizes(batch=queries.shape[0], queries=queries.shape[1], keys=keys.shape[1], query_size=queries.shape[2],
                   key_size=keys.shape[2], value_size=values.shape[2])


def forward(ctx: CheckContext, model: StudentObject, name: str, inputs: tuple, valid: np.ndarray | None,
            expected: tuple[np.ndarray, np.ndarray], *, check_weights: bool = True,
            weights_asked_in: str | None = KEEPS_WEIGHTS) -> None:
    """``weights_asked_in``: the title of the question's check that asks for the kept weights; None when this check
    is the one."""
    name_inputs(ctx, *inputs)
    queries, keys, values = (Arg.tensor(x) for x in inputs)
    output = model(queries, keys, values, as_arg(valid))
    if check_weights:  # first: wrong weights explain a wrong output, and the heatmaps show how
        weights = model.attribute("attention_weights")
        label = f"{name}.attention_weights"
        if weights_asked_in is not None:
            ctx.expect_kept(label, weights, expected[1], asked_in=weights_asked_in, attention=True, axes=WEIGHTS_AXES)
        else:
            ctx.expect(weights is not None, f"{name} does not store self.attention_weights in forward")
            ctx.expect_tensor(label, weights, expected[1], attention=True, axes=WEIGHTS_AXES)
    ctx.expect_tensor(f"the output of {name}", output, expected[0], axes=OUTPUT_AXES)


# ----- q1 masked_softmax -----------------------------------------------------------------------------------------
def expect_masked_softmax(ctx: CheckContext, X: np.ndarray, valid: np.ndarray | None) -> None:
    ctx.name_sizes(batch=X.shape[0], queries=X.shape[1], keys=X.shape[2])
    got = ctx.student.function("masked_softmax")(Arg.tensor(X), as_arg(valid))
    ctx.expect_tensor("masked_softmax(X, valid_lens)", got, ref.masked_softmax(X, valid), attention=True,
                      axes=WEIGHTS_AXES)


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
    s = random_sizes(ctx, "batch", "queries", "keys")
    batch, queries, keys = s["batch"], s["queries"], s["keys"]
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
    """Each row of the first example has its largest score on key 4, the first one its valid length masks, so that a
    mask applied after the softmax, or one key too late, changes the weights whatever the draw."""
    X = ctx.rng.normal(100, 30, (2, 3, 6))
    largest = X[0].argmax(axis=-1)
    rows = np.arange(3)
    X[0, rows, largest], X[0, rows, 4] = X[0, rows, 4], X[0, rows, largest]
    expect_masked_softmax(ctx, X, np.array([4, 6]))


# ----- q2 AdditiveAttention --------------------------------------------------------------------------------------
def new_additive(ctx: CheckContext, *, query_size: int, key_size: int, hiddens: int,
                 dropout: float = 0.1) -> StudentObject:
    return ctx.student.construct("AdditiveAttention", num_hiddens=hiddens, dropout=dropout,
                                 optional={"key_size": key_size, "query_size": query_size})


def additive_shapes(query_size: int, key_size: int, hiddens: int) -> dict[str, tuple[int, int]]:
    return {"W_q.weight": (hiddens, query_size), "W_k.weight": (hiddens, key_size), "w_v.weight": (1, hiddens)}


def additive(ctx: CheckContext, *, query_size: int, key_size: int, hiddens: int,
             dropout: float = 0.1) -> tuple[StudentObject, dict[str, np.ndarray]]:
    model = new_additive(ctx, query_size=query_size, key_size=key_size, hiddens=hiddens, dropout=dropout)
    scales = {"W_q.weight": 1 / np.sqrt(query_size), "W_k.weight": 1 / np.sqrt(key_size),
              "w_v.weight": 2 / np.sqrt(hiddens)}
    weights = {name: ctx.rng.normal(0, scales[name], shape)
               for name, shape in additive_shapes(query_size, key_size, hiddens).items()}
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
    name_inputs(ctx, queries, keys, values)
    model(Arg.tensor(queries), Arg.tensor(keys), Arg.tensor(values), as_arg(valid))
    weights = model.attribute("attention_weights")
    ctx.expect(weights is not None, "AdditiveAttention does not store self.attention_weights in forward")
    expected = ref.additive_attention(queries, keys, values, valid, w["W_q.weight"], w["W_k.weight"],
                                      w["w_v.weight"])[1]
    ctx.expect_tensor("AdditiveAttention.attention_weights", weights, expected, attention=True, axes=WEIGHTS_AXES)


@check("q2", points=4, title="parameters: W_q, W_k and w_v without bias")
def q2_parameters(ctx: CheckContext) -> None:
    """Read from the module as constructed: a lazy layer's output size is known before its first call."""
    model = new_additive(ctx, query_size=5, key_size=3, hiddens=4)
    binding = model.bind(additive_shapes(5, 3, 4))
    ctx.expect(binding.usable, binding.problem("AdditiveAttention"))
    missing = [name.removesuffix(".weight") for name in binding.missing]
    ctx.expect(not missing, f"AdditiveAttention has no parameter for {', '.join(missing)} of the additive score "
                            "w_v^T tanh(W_q q + W_k k)",
               misconception="q2.no_projections" if {"W_q", "W_k"} <= set(missing) else None)
    extra = binding.unused
    ctx.expect(not extra, f"AdditiveAttention has parameters the additive score does not use: {', '.join(extra)} "
                          "(create W_q, W_k and w_v with bias=False)",
               misconception="q2.bias_present" if any(name.endswith(".bias") for name in extra) else None)
    ctx.expect(binding.exact, binding.rename_message("AdditiveAttention"))


@check("q2", points=6, visibility=HIDDEN, title="random shapes, query and key sizes differ, 1-D valid_lens")
def q2_random_1d(ctx: CheckContext) -> None:
    additive_case(ctx, 1)


@check("q2", points=4, visibility=HIDDEN, title="random shapes, 2-D valid_lens, queries and keys of one size")
def q2_random_2d(ctx: CheckContext) -> None:
    additive_case(ctx, 2, one_size=True)


def expect_no_nan(ctx: CheckContext, name: str, mode: str, *outputs: Returned) -> None:
    """Fail, naming no mistake, when an output holds NaN: NaN equals nothing, not even itself, so the comparisons
    the dropout checks make would blame dropout for it."""
    for output in outputs:
        array = output.array
        if array is not None and array.dtype.kind in "fc" and np.isnan(array).any():
            count = int(np.isnan(array).sum())
            ctx.expect(False, f"the output of {name} in {mode} mode holds NaN ({count} of {array.size} entries): "
                              "each entry should be a number (0/0, inf - inf and 0 * inf give NaN)",
                       hint=f"the output of {name} in {mode} mode holds NaN")


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
    expect_no_nan(ctx, name, "training", first, second)
    expect_no_nan(ctx, name, "eval", evaluated)
    changed = not (np.allclose(first.array, evaluated.array) and np.allclose(second.array, evaluated.array))
    ctx.expect(changed, f"{name} gives the same output in training and eval mode with dropout=0.5: apply "
                        "self.dropout to the attention weights", misconception=misconception)


def expect_eval_deterministic(ctx: CheckContext, model: StudentObject, name: str, inputs: tuple,
                              valid: np.ndarray, *, misconception: str | None = None) -> None:
    args = [Arg.tensor(x) for x in inputs] + [as_arg(valid)]
    model.eval()
    first, second = model(*args), model(*args)
    ctx.expect(first.is_tensor and second.is_tensor, f"{name} should return a torch.Tensor")
    # NaN where both calls have it is the same output (and is then failed for itself, below).
    floats = all(a is not None and a.dtype.kind in "fc" for a in (first.array, second.array))
    same = np.array_equal(first.array, second.array, equal_nan=floats)
    ctx.expect(same, f"{name} gives different outputs for the same inputs in eval mode: dropout must only act in "
                     "training mode (use self.dropout, an nn.Dropout, not F.dropout(..., training=True))",
               misconception=misconception)
    expect_no_nan(ctx, name, "eval", first)


def dropout_inputs(ctx: CheckContext, query_size: int, key_size: int) -> tuple[tuple, np.ndarray]:
    inputs = (ctx.rng.normal(size=(2, 4, query_size)), ctx.rng.normal(size=(2, 6, key_size)),
              ctx.rng.normal(size=(2, 6, 3)))
    return inputs, np.array([5, 6])


@check("q2", points=3, title="eval mode is deterministic (dropout off)")
def q2_eval_deterministic(ctx: CheckContext) -> None:
    """The student's own weights: dropout is what is checked, not the score."""
    model = new_additive(ctx, query_size=4, key_size=3, hiddens=5, dropout=0.5)
    expect_eval_deterministic(ctx, model, "AdditiveAttention", *dropout_inputs(ctx, 4, 3),
                              misconception="q2.dropout_in_eval")


@check("q2", points=3, title="dropout acts in training mode")
def q2_dropout_in_training(ctx: CheckContext) -> None:
    model = new_additive(ctx, query_size=4, key_size=3, hiddens=5, dropout=0.5)
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
        name_inputs(ctx, *inputs)
        output = model(*(Arg.tensor(x) for x in inputs))
        ctx.expect_tensor("the output of DotProductAttention called without valid_lens", output, expected[0],
                          axes=OUTPUT_AXES)
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
    name_inputs(ctx, queries, keys, values)
    model(Arg.tensor(queries), Arg.tensor(keys), Arg.tensor(values), as_arg(valid))
    weights = model.attribute("attention_weights")
    ctx.expect(weights is not None, "DotProductAttention does not store self.attention_weights in forward")
    expected = ref.dot_product_attention(queries, keys, values, valid)[1]
    ctx.expect_tensor("DotProductAttention.attention_weights", weights, expected, attention=True, axes=WEIGHTS_AXES)


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


BILINEAR_FIXED = "queries of size 5 against keys of size 3, valid_lens [2, 4]"


def bilinear_case(ctx: CheckContext, sizes: dict[str, int], valid: np.ndarray | None, *,
                  weights_asked_in: str | None = BILINEAR_FIXED) -> None:
    model, W = bilinear(ctx, sizes["query_size"], sizes["key_size"])
    inputs = (ctx.rng.normal(size=(sizes["batch"], sizes["queries"], sizes["query_size"])),
              ctx.rng.normal(size=(sizes["batch"], sizes["keys"], sizes["key_size"])),
              ctx.rng.normal(size=(sizes["batch"], sizes["keys"], sizes["value_size"])))
    forward(ctx, model, "BilinearAttention", inputs, valid, ref.bilinear_attention(*inputs, valid, W),
            weights_asked_in=weights_asked_in)


@check("q4", points=4, title="parameter W of shape (query_size, key_size)")
def q4_parameter_shape(ctx: CheckContext) -> None:
    model = ctx.student.construct("BilinearAttention", query_size=5, key_size=3, dropout=0.1)
    binding = model.bind({"W": (5, 3)})
    transposed = [shape for _, shape in binding.wrong_shape.values()] == [(3, 5)]
    ctx.expect(binding.usable, f"{binding.problem('BilinearAttention')}: W is (query_size, key_size) = (5, 3)",
               misconception="q4.transposed_W" if transposed else None)
    found = [f.name for f in binding.found]
    ctx.expect(not binding.missing, f"BilinearAttention has no parameter W of shape (query_size, key_size) = (5, 3) "
                                    f"(it has: {', '.join(found) or 'none'})")
    ctx.expect(binding.exact, binding.rename_message("BilinearAttention"))


@check("q4", points=6, title=BILINEAR_FIXED)
def q4_fixed_case(ctx: CheckContext) -> None:
    """The check that asks for the kept attention weights."""
    sizes = {"batch": 2, "queries": 3, "keys": 4, "query_size": 5, "key_size": 3, "value_size": 2}
    bilinear_case(ctx, sizes, np.array([2, 4]), weights_asked_in=None)


def random_bilinear(ctx: CheckContext, valid_ndim: int) -> None:
    s = random_sizes(ctx, "batch", "queries", "keys", "query_size", "key_size", "value_size")
    bilinear_case(ctx, s, valid_lens_for(ctx.rng, s["batch"], s["queries"], s["keys"], valid_ndim))


@check("q4", points=5, visibility=HIDDEN, title="random shapes, 1-D valid_lens")
def q4_random_1d(ctx: CheckContext) -> None:
    random_bilinear(ctx, 1)


@check("q4", points=5, visibility=HIDDEN, title="random shapes, 2-D valid_lens")
def q4_random_2d(ctx: CheckContext) -> None:
    random_bilinear(ctx, 2)
