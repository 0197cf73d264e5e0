"""Graded checks for keras_additive_attention. Points: q1 40 (scores and output), q2 45 (masks), q3 15 (dropout).

One class, KerasAdditiveAttention, checked feature by feature: the masks and dropout checks run with
use_scale=False and the key omitted, so a mistake with the scale or the key costs points in q1 only. The grader sets
`scale` when it exists (or the one vector parameter of its shape, which q1.scale_parameter then asks to rename).
Random checks draw generic shapes (every size at least 2, batch, Tq, Tv and dim distinct) and masks that mask
something.
No mask leaves a query without a key to attend to (Keras then averages in float32, but not in float64).
"""

from __future__ import annotations

import numpy as np

from grader.check import HIDDEN, Arg, Assignment, CheckContext, Question, StudentObject

from . import reference_numpy as ref

ASSIGNMENT = Assignment(
    name="keras_additive_attention",
    title="The Keras AdditiveAttention layer in PyTorch",
    questions=[
        Question("q1", "Scores and output: scale, key, returned distribution", defines=("KerasAdditiveAttention",)),
        Question("q2", "Masks: value_mask, query_mask, causal"),
        Question("q3", "Dropout on the distribution"),
    ],
)
check = ASSIGNMENT.check
NAME = "KerasAdditiveAttention"


# ----- helpers ---------------------------------------------------------------------------------------------------
def layer(ctx: CheckContext, dim: int, *, use_scale: bool = True, causal: bool = False,
          dropout: float = 0.0) -> tuple[StudentObject, np.ndarray | None]:
    model = ctx.student.construct(NAME, dim=dim, use_scale=use_scale, causal=causal, dropout=dropout)
    scale = None
    if use_scale:
        scale = ctx.rng.uniform(0.2, 2.0, dim)
        model.set_parameters({"scale": scale})
    model.eval()
    return model, scale


def tensors(ctx: CheckContext, batch: int, tq: int, tv: int, dim: int) -> tuple[np.ndarray, ...]:
    """query, value, key, with values large enough that tanh does not flatten every score."""
    return (ctx.rng.normal(0, 1.5, (batch, tq, dim)), ctx.rng.normal(0, 1, (batch, tv, dim)),
            ctx.rng.normal(0, 1.5, (batch, tv, dim)))


def value_mask_for(ctx: CheckContext, batch: int, tv: int, *, causal_queries: int | None = None) -> np.ndarray:
    """Padding at the end of each sequence, key 0 always real (so a causal row 0 keeps a key), and some padded key
    that a query attends (else a mask ignored passes): with a causal mask over ``causal_queries`` queries, query i
    attends keys 0..i, so some sequence is padded before key min(Tq, Tv) - 1."""
    lengths = ctx.rng.integers(1, tv + 1, batch)
    attended = tv if causal_queries is None else min(tv, causal_queries)
    if attended > 1 and (lengths >= attended).all():
        lengths[0] = attended - 1
    return np.arange(tv)[None, :] < lengths[:, None]


def query_mask_for(ctx: CheckContext, batch: int, tq: int) -> np.ndarray:
    mask = ctx.rng.random((batch, tq)) < 0.6
    mask[:, 0] = True
    mask[:, -1] = False  # at least one masked query row
    return mask


OUTPUT_AXES = ("batch", "queries", "dim")


def name_inputs(ctx: CheckContext, query: np.ndarray, value: np.ndarray) -> None:
    """Name the sizes of the layer's inputs (Tq queries, Tv values), so that an answer of another shape is told axis
    by axis."""
    ctx.name_sizes(batch=query.shape[0], queries=query.shape[1], values=value.shape[1], dim=query.shape[2])


def compare(ctx: CheckContext, model: StudentObject, query: np.ndarray, value: np.ndarray, *,
            key: np.ndarray | None = None, scale: np.ndarray | None = None, query_mask: np.ndarray | None = None,
            value_mask: np.ndarray | None = None, causal: bool = False, what: str = "") -> None:
    """Call the layer with return_attention_scores=True; its distribution, then its output, must be Keras's."""
    kwargs: dict[str, Arg] = {}
    if key is not None:
        kwargs["key"] = Arg.tensor(key)
    if query_mask is not None:
        kwargs["query_mask"] = Arg.tensor(query_mask, "bool")
    if value_mask is not None:
        kwargs["value_mask"] = Arg.tensor(value_mask, "bool")
    name_inputs(ctx, query, value)
    got = model(Arg.tensor(query), Arg.tensor(value), **kwargs, return_attention_scores=Arg(True))
    output, distribution = ctx.expect_sequence(f"{NAME} with return_attention_scores=True", got,
                                               ("output", "attention_scores"))
    expected = ref.additive_attention(query, value, key, scale=scale, query_mask=query_mask, value_mask=value_mask,
                                      causal=causal)
    suffix = f" {what}" if what else ""
    ctx.expect_tensor(f"the attention scores{suffix}", distribution, expected[1], attention=True,
                      axes=("batch", "queries", "values"))
    ctx.expect_tensor(f"the output{suffix}", output, expected[0], axes=OUTPUT_AXES)


def random_shape(ctx: CheckContext) -> tuple[int, ...]:
    """batch, Tq, Tv and dim, drawn with ctx.sizes so that a failing check can be run again smaller; generic: each
    at least 2 and all distinct (a causal mask built Tq x Tq, or a scale over Tv, then fails on every draw)."""
    return ctx.sizes(batch=(2, 5), queries=(2, 7), values=(2, 8), dim=(2, 7),
                     distinct=("batch", "queries", "values", "dim"))


# ----- q1 scores and output --------------------------------------------------------------------------------------
@check("q1", points=8, title="key omitted: the value is the key too")
def q1_key_omitted(ctx: CheckContext) -> None:
    model, scale = layer(ctx, 4)
    query, value, _ = tensors(ctx, 2, 3, 5, 4)
    compare(ctx, model, query, value, scale=scale, what="(key omitted)")


@check("q1", points=8, title="key given, different from the value")
def q1_key_given(ctx: CheckContext) -> None:
    model, scale = layer(ctx, 4)
    query, value, key = tensors(ctx, 2, 3, 5, 4)
    compare(ctx, model, query, value, key=key, scale=scale, what="(key given)")


@check("q1", points=6, title="use_scale=False: no scale parameter, the tanh terms summed as they are")
def q1_no_scale(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False)
    found = model.parameters()
    ctx.expect(not found, f"with use_scale=False, {NAME} should have no parameters (no `scale`), found {sorted(found)}")
    query, value, key = tensors(ctx, 2, 2, 4, 3)
    compare(ctx, model, query, value, key=key, what="(use_scale=False)")


@check("q1", points=6, title="a parameter `scale` of shape (dim,) with use_scale=True")
def q1_scale_parameter(ctx: CheckContext) -> None:
    model = ctx.student.construct(NAME, dim=5, use_scale=True)
    binding = model.bind({"scale": (5,)})
    found = model.parameters()
    wanted = f"{NAME}(dim=5) should have exactly one parameter, `scale` of shape (5,); found {found}"
    ctx.expect(binding.usable and not binding.missing and not binding.unused, wanted)
    ctx.expect(binding.exact, binding.rename_message(NAME))


@check("q1", points=6, title="return_attention_scores=False returns the output tensor alone")
def q1_return_output_only(ctx: CheckContext) -> None:
    model, scale = layer(ctx, 4)
    query, value, key = tensors(ctx, 2, 3, 5, 4)
    name_inputs(ctx, query, value)
    got = model(Arg.tensor(query), Arg.tensor(value), key=Arg.tensor(key))
    ctx.expect_tensor(f"{NAME}(query, value, key=key)", got, ref.additive_attention(query, value, key, scale=scale)[0],
                      axes=OUTPUT_AXES)


@check("q1", points=6, visibility=HIDDEN, title="random shapes, key given")
def q1_random(ctx: CheckContext) -> None:
    """The key is always given: the case where code that ignores it fails (q1.key_omitted covers the other)."""
    batch, tq, tv, dim = random_shape(ctx)
    model, scale = layer(ctx, dim)
    query, value, key = tensors(ctx, batch, tq, tv, dim)
    compare(ctx, model, query, value, key=key, scale=scale)


# ----- q2 masks --------------------------------------------------------------------------------------------------
@check("q2", points=9, title="value_mask: padded keys get no weight")
def q2_value_mask(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False)
    query, value, _ = tensors(ctx, 3, 2, 6, 3)
    mask = np.array([[True] * 6, [True] * 4 + [False] * 2, [True] + [False] * 5])
    compare(ctx, model, query, value, value_mask=mask, what="with value_mask")


@check("q2", points=8, title="query_mask: output rows of masked queries are zero")
def q2_query_mask(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False)
    query, value, _ = tensors(ctx, 2, 4, 5, 3)
    mask = np.array([[True, True, False, True], [True, False, False, False]])
    compare(ctx, model, query, value, query_mask=mask, what="with query_mask")


@check("q2", points=7, title="causal, Tq = Tv: query i attends keys 0..i")
def q2_causal_square(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 4, use_scale=False, causal=True)
    query, value, _ = tensors(ctx, 2, 5, 5, 4)
    compare(ctx, model, query, value, causal=True, what="(causal)")


@check("q2", points=7, title="causal with Tq != Tv (4 queries, 6 keys; 5 queries, 3 keys)")
def q2_causal_rectangular(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 2, use_scale=False, causal=True)
    for tq, tv in ((4, 6), (5, 3)):
        query, value, _ = tensors(ctx, 2, tq, tv, 2)
        compare(ctx, model, query, value, causal=True, what=f"(causal, Tq={tq}, Tv={tv})")


@check("q2", points=7, title="value_mask and query_mask together")
def q2_both_masks(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False)
    query, value, _ = tensors(ctx, 3, 4, 5, 3)
    compare(ctx, model, query, value, value_mask=value_mask_for(ctx, 3, 5),
            query_mask=query_mask_for(ctx, 3, 4), what="with both masks")


@check("q2", points=7, visibility=HIDDEN, title="random shapes, causal with both masks")
def q2_random(ctx: CheckContext) -> None:
    batch, tq, tv, dim = random_shape(ctx)
    model, _ = layer(ctx, dim, use_scale=False, causal=True)
    query, value, _ = tensors(ctx, batch, tq, tv, dim)
    compare(ctx, model, query, value, value_mask=value_mask_for(ctx, batch, tv, causal_queries=tq),
            query_mask=query_mask_for(ctx, batch, tq), causal=True)


# ----- q3 dropout ------------------------------------------------------------------------------------------------
@check("q3", points=7, title="dropout=0.5 in eval mode: no dropout, the same result twice")
def q3_eval_deterministic(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False, dropout=0.5)
    query, value, _ = tensors(ctx, 2, 4, 6, 3)
    args = (Arg.tensor(query), Arg.tensor(value))
    first, second = model(*args), model(*args)
    expected = ref.additive_attention(query, value)[0]
    # Output holding NaN is no sign of dropout (NaN equals nothing, not even itself): expect_tensor says it holds NaN.
    if first.is_tensor and second.is_tensor and first.array is not None and second.array is not None \
            and first.shape == second.shape == expected.shape \
            and not (np.isnan(first.array).any() or np.isnan(second.array).any()):
        ctx.expect(np.allclose(first.array, expected, rtol=1e-4, atol=1e-5)
                   or np.allclose(first.array, second.array, rtol=1e-4, atol=1e-5),
                   "the output in eval mode differs from the reference, and from a second call on the same inputs: "
                   "dropout should do nothing in eval mode", misconception="q3.dropout_in_eval")
    ctx.expect_tensor("the output in eval mode", first, expected)
    ctx.expect_tensor("the output of a second call in eval mode", second, expected)


@check("q3", points=8, title="dropout=0.5 in training mode drops weights of the distribution, scaling the rest")
def q3_training_drops(ctx: CheckContext) -> None:
    model, _ = layer(ctx, 3, use_scale=False, dropout=0.5)
    model.train()
    query, value, _ = tensors(ctx, 4, 5, 8, 3)
    got = model(Arg.tensor(query), Arg.tensor(value), return_attention_scores=Arg(True))
    output, distribution = ctx.expect_sequence(f"{NAME} with return_attention_scores=True", got,
                                               ("output", "attention_scores"))
    weights = ref.additive_attention(query, value)[1]
    ctx.expect(distribution.is_tensor and distribution.shape == weights.shape and distribution.array is not None,
               f"in training mode the attention scores should be a tensor of shape {weights.shape}, got "
               f"{distribution.describe()}", hint="the attention scores in training mode are not a tensor")
    nan = int(np.isnan(distribution.array).sum())
    ctx.expect(nan == 0, f"in training mode the attention scores hold NaN ({nan} of {weights.size} entries): each "
                         "should be a number (0/0, inf - inf and 0 * inf give NaN)",
               hint="the attention scores in training mode hold NaN")
    dropped = np.isclose(distribution.array, 0.0, atol=1e-7)
    kept = np.isclose(distribution.array, weights / 0.5, rtol=1e-4, atol=1e-6)
    ctx.expect(bool(dropped.any()), f"with dropout=0.5 in training mode, none of the {weights.size} attention weights "
                                    "was dropped: apply self.dropout (an nn.Dropout) to the distribution",
               misconception="q3.no_dropout")
    ctx.expect(bool((dropped | kept).all()),
               "in training mode each attention weight should be dropped (0) or scaled by 1 / (1 - 0.5), as "
               "nn.Dropout does to the distribution; some are neither")
    ctx.expect_tensor("the output in training mode (the dropped-out distribution @ value)", output,
                      distribution.array.astype(np.float64) @ value)
