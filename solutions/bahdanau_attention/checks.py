"""Graded checks for bahdanau_attention. Points: q1 30, q2 40, q3 30 (100 in all).

The fixed case is the seed's (input_dim 20, hidden_dim 32, one query against 10 keys); random cases draw sizes and
values from the check's seed. Every weight is set by the grader through the parameter names the assignment gives
(or where the naming rule binds them in a module that names them otherwise: q1.parameters and q2.structure then ask
for the names), so the student's initialisation never matters. Random sizes are drawn generic: at least 2, and the
input and hidden sizes, and the key and value counts, distinct. q2 and q3 run with the reference AdditiveAttention in
place of the student's, so a mistake in q1 costs points in q1 only.
"""

from __future__ import annotations

import numpy as np

from grader.check import (
    HIDDEN,
    Arg,
    Assignment,
    CheckContext,
    Question,
    Returned,
    StudentObject,
    StudentRaised,
    WrongAnswer,
    compare_tensor,
)

from . import reference_numpy as ref

CONVENTION = ("the assignment passes one query, unbatched: query (1, input_dim), key (n, input_dim) and value "
              "(n, value_dim); code written for batches (batch, n, input_dim) fails this way")

ASSIGNMENT = Assignment(
    name="bahdanau_attention",
    title="Bahdanau additive attention: one query, multi-head, chunked",
    questions=[
        Question("q1", "AdditiveAttention", defines=("AdditiveAttention",), convention=CONVENTION),
        Question("q2", "MultiHeadAdditiveAttention", defines=("MultiHeadAdditiveAttention",),
                 graded_with_reference=("AdditiveAttention",), convention=CONVENTION),
        Question("q3", "chunked_additive_attention", defines=("chunked_additive_attention",),
                 graded_with_reference=("AdditiveAttention",), convention=CONVENTION),
    ],
    provided="provided.py",
)
check = ASSIGNMENT.check

HEADS_AXES = ("Keys", "Heads")
MEMORY_KEYS = 1_000_000
MEMORY_INPUT_DIM, MEMORY_HIDDEN_DIM = 16, 64
MEMORY_BUDGET = 96 << 20  # the full computation needs (n, hidden_dim) float32 arrays of 256 MB each


# ----- inputs and parameters -------------------------------------------------------------------------------------
def layer_parameters(rng: np.random.Generator, input_dim: int, hidden_dim: int,
                     prefix: str = "") -> dict[str, np.ndarray]:
    """Weights for one AdditiveAttention, keyed by the parameter names the assignment gives."""
    scale_in, scale_hidden = 1 / np.sqrt(input_dim), 2 / np.sqrt(hidden_dim)
    return {f"{prefix}query_layer.weight": rng.normal(0, scale_in, (hidden_dim, input_dim)),
            f"{prefix}query_layer.bias": rng.normal(0, 0.5, hidden_dim),
            f"{prefix}key_layer.weight": rng.normal(0, scale_in, (hidden_dim, input_dim)),
            f"{prefix}key_layer.bias": rng.normal(0, 0.5, hidden_dim),
            f"{prefix}energy_layer.weight": rng.normal(0, scale_hidden, (1, hidden_dim)),
            f"{prefix}energy_layer.bias": rng.normal(0, 0.5, 1)}


def unprefixed(params: dict[str, np.ndarray], prefix: str, *, keep_prefix: bool = False) -> dict[str, np.ndarray]:
    return {name if keep_prefix else name.removeprefix(prefix): value for name, value in params.items()
            if name.startswith(prefix)}


def additive(ctx: CheckContext, input_dim: int, hidden_dim: int) -> tuple[StudentObject, dict[str, np.ndarray]]:
    model = ctx.student.construct("AdditiveAttention", input_dim=input_dim, hidden_dim=hidden_dim)
    params = layer_parameters(ctx.rng, input_dim, hidden_dim)
    model.set_parameters(params)
    return model, params


def inputs(rng: np.random.Generator, n: int, input_dim: int, value_dim: int) -> tuple[np.ndarray, ...]:
    return (rng.normal(size=(1, input_dim)), rng.normal(size=(n, input_dim)), rng.normal(size=(n, value_dim)))


def memory_inputs(rng: np.random.Generator, n: int, input_dim: int, value_dim: int) -> tuple[np.ndarray, ...]:
    """``inputs``, the keys and values in float32: sent as they will be used, half the bytes."""
    query, key, value = inputs(rng, n, input_dim, value_dim)
    return query, key.astype(np.float32), value.astype(np.float32)


def expect_outputs(ctx: CheckContext, name: str, got: Returned, expected: tuple[np.ndarray, np.ndarray], *,
                   first: str, axes: tuple[str, str] = ("Keys", "Query"), rtol: float = 1e-4,
                   atol: float = 1e-5, shapes: tuple[tuple[str, ...], tuple[str, ...]] = (("value_dim",), ("keys",))
                   ) -> None:
    """``got`` must be a (first, attention_weights) pair equal to ``expected``; the weights are drawn. ``shapes``:
    the names of the axes of the two, as the check names its sizes."""
    output, weights = ctx.expect_sequence(name, got, (first, "attention_weights"))
    ctx.expect_tensor(f"the attention_weights returned by {name}", weights, expected[1], attention=axes,
                      rtol=rtol, atol=atol, axes=shapes[1])
    ctx.expect_tensor(f"the {first} returned by {name}", output, expected[0], rtol=rtol, atol=atol, axes=shapes[0])


def agrees(got: object, expected: tuple[np.ndarray, np.ndarray], *, rtol: float, atol: float) -> bool:
    """``got`` is the pair ``expected``: for recognising a known mistake once a check has failed."""
    return (got is not None and got.kind == "sequence" and got.length == 2
            and all(compare_tensor("", item, want, rtol=rtol, atol=atol) is None
                    for item, want in zip(got.items, expected)))


def run_additive(ctx: CheckContext, *, n: int, input_dim: int, hidden_dim: int, value_dim: int) -> None:
    model, params = additive(ctx, input_dim, hidden_dim)
    query, key, value = inputs(ctx.rng, n, input_dim, value_dim)
    ctx.name_sizes(keys=n, input_dim=input_dim, hidden_dim=hidden_dim, value_dim=value_dim)
    try:
        got = model(Arg.tensor(query), Arg.tensor(key), Arg.tensor(value))
    except StudentRaised as exc:
        # The write-up's .squeeze() makes a single key's (1, 1) scores a 0-d tensor, which the weighted sum rejects.
        # Said only where the code that raised has such a squeeze: the same error comes from a softmax over dim=1
        # of (n,) scores, say, whatever n.
        zero_d = n == 1 and any(text in exc.exc_message for text in ("0D", "[-1, 0]", "dimensions (0)"))
        ctx.expect(not (zero_d and ctx.student.bare_calls(exc, "squeeze")), exc.message,
                   hint=f"your code raised {exc.exc_type}", misconception="q1.squeeze")
        raise
    expect_outputs(ctx, "AdditiveAttention", got, ref.additive_attention(query, key, value, params),
                first="weighted_sum")


# ----- q1 AdditiveAttention --------------------------------------------------------------------------------------
@check("q1", points=8, title="the seed's example: input_dim 20, hidden_dim 32, one query against 10 keys")
def q1_seed_example(ctx: CheckContext) -> None:
    run_additive(ctx, n=10, input_dim=20, hidden_dim=32, value_dim=20)


@check("q1", points=6, title="a single key (n = 1): weights [1.0], and the weighted sum is that key's value")
def q1_single_key(ctx: CheckContext) -> None:
    run_additive(ctx, n=1, input_dim=6, hidden_dim=4, value_dim=3)


@check("q1", points=5, title="values with another size than the keys (value_dim 7)")
def q1_value_dim(ctx: CheckContext) -> None:
    run_additive(ctx, n=5, input_dim=4, hidden_dim=8, value_dim=7)


def shapes_of(params: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {name: tuple(value.shape) for name, value in params.items()}


@check("q1", points=5, title="parameters: query_layer, key_layer and energy_layer, all with bias")
def q1_parameters(ctx: CheckContext) -> None:
    model = ctx.student.construct("AdditiveAttention", input_dim=5, hidden_dim=3)
    binding = model.bind(shapes_of(layer_parameters(ctx.rng, 5, 3)))
    ctx.expect(binding.usable, binding.problem("AdditiveAttention"))
    missing = list(binding.missing)
    without_bias = None
    if missing == ["energy_layer.bias"]:
        without_bias = "q1.energy_without_bias"
    elif missing and all(name.endswith(".bias") for name in missing):
        without_bias = "q1.layers_without_bias"
    ctx.expect(not missing, f"AdditiveAttention has no parameter {', '.join(missing)} (every layer of the "
                            "additive score has a bias: nn.Linear(..., bias=True), the default)",
               misconception=without_bias)
    extra = binding.unused
    ctx.expect(not extra, f"AdditiveAttention has parameters the assignment does not ask for: {', '.join(extra)}")
    ctx.expect(binding.exact, binding.rename_message("AdditiveAttention"))


@check("q1", points=6, visibility=HIDDEN, title="random sizes")
def q1_random(ctx: CheckContext) -> None:
    n, input_dim, hidden_dim, value_dim = ctx.sizes(keys=(2, 30), input_dim=(2, 12), hidden_dim=(2, 16),
                                                    value_dim=(2, 9), distinct=("keys", "input_dim", "hidden_dim",
                                                                                "value_dim"))
    run_additive(ctx, n=n, input_dim=input_dim, hidden_dim=hidden_dim, value_dim=value_dim)


# ----- q2 MultiHeadAdditiveAttention -----------------------------------------------------------------------------
def run_multi_head(ctx: CheckContext, *, n: int, input_dim: int, hidden_dim: int, num_heads: int) -> None:
    model = ctx.student.construct("MultiHeadAdditiveAttention", input_dim=input_dim, hidden_dim=hidden_dim,
                                  num_heads=num_heads)
    params = multi_head_parameters(ctx.rng, input_dim, hidden_dim, num_heads)
    model.set_parameters(params)
    query, key, value = inputs(ctx.rng, n, input_dim, input_dim)
    ctx.name_sizes(keys=n, input_dim=input_dim, hidden_dim=hidden_dim, heads=num_heads)
    got = model(Arg.tensor(query), Arg.tensor(key), Arg.tensor(value))
    heads = [unprefixed(params, f"heads.{i}.") for i in range(num_heads)]
    expected = ref.multi_head_attention(query, key, value, heads, unprefixed(params, "out_layer.", keep_prefix=True))
    expect_outputs(ctx, "MultiHeadAdditiveAttention", got, expected, first="output", axes=HEADS_AXES,
                   shapes=(("input_dim",), ("heads", "keys")))


def multi_head_parameters(rng: np.random.Generator, input_dim: int, hidden_dim: int,
                          num_heads: int) -> dict[str, np.ndarray]:
    """The heads' layers and out_layer, keyed by the names the assignment gives."""
    heads = {name: value for i in range(num_heads)
             for name, value in layer_parameters(rng, input_dim, hidden_dim, f"heads.{i}.").items()}
    width = num_heads * input_dim
    return heads | {"out_layer.weight": rng.normal(0, 1 / np.sqrt(width), (input_dim, width)),
                    "out_layer.bias": rng.normal(0, 0.5, input_dim)}


@check("q2", points=10, title="structure: heads (an nn.ModuleList of AdditiveAttention) and out_layer")
def q2_structure(ctx: CheckContext) -> None:
    model = ctx.student.construct("MultiHeadAdditiveAttention", input_dim=6, hidden_dim=5, num_heads=3)
    binding = model.bind(shapes_of(multi_head_parameters(ctx.rng, 6, 5, 3)))
    out = binding.wrong_shape.get("out_layer.weight")
    ctx.expect(not out, f"out_layer should be nn.Linear(num_heads * input_dim, input_dim) = nn.Linear(18, 6), found "
                        f"weight {out[1] if out else None}",
               misconception="q2.mean_of_heads" if out and out[1] == (6, 6) else None)
    ctx.expect(binding.usable, binding.problem("MultiHeadAdditiveAttention"))
    ctx.expect(not binding.missing and not binding.unused,
               "MultiHeadAdditiveAttention should hold its heads in `self.heads`, an nn.ModuleList of 3 "
               "AdditiveAttention(input_dim, hidden_dim), and out_layer = nn.Linear(18, 6); found parameters "
               f"{[f.name for f in binding.found]}")
    ctx.expect(binding.exact, binding.rename_message("MultiHeadAdditiveAttention"))


@check("q2", points=13, title="4 heads, input_dim 8, hidden_dim 16, 5 keys")
def q2_four_heads(ctx: CheckContext) -> None:
    run_multi_head(ctx, n=5, input_dim=8, hidden_dim=16, num_heads=4)


@check("q2", points=7, title="a single head")
def q2_one_head(ctx: CheckContext) -> None:
    run_multi_head(ctx, n=4, input_dim=3, hidden_dim=5, num_heads=1)


@check("q2", points=10, visibility=HIDDEN, title="random sizes")
def q2_random(ctx: CheckContext) -> None:
    n, input_dim, hidden_dim, num_heads = ctx.sizes(keys=(2, 20), input_dim=(2, 10), hidden_dim=(2, 12),
                                                    heads=(2, 6), distinct=("keys", "input_dim", "hidden_dim",
                                                                            "heads"))
    run_multi_head(ctx, n=n, input_dim=input_dim, hidden_dim=hidden_dim, num_heads=num_heads)


# ----- q3 chunked_additive_attention -----------------------------------------------------------------------------
def softmax_per_chunk(query: np.ndarray, key: np.ndarray, value: np.ndarray, params: dict[str, np.ndarray],
                      chunk_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The known mistake q3.softmax_per_chunk: a softmax within each chunk, the chunks' results averaged."""
    scores = ref.additive_scores(query.astype(np.float64), key.astype(np.float64), params)
    starts = range(0, len(scores), chunk_size)
    weights = np.concatenate([ref.softmax(scores[start:start + chunk_size]) for start in starts]) / len(starts)
    return weights @ value.astype(np.float64), weights


def expect_chunked(ctx: CheckContext, got: Returned, expected: tuple[np.ndarray, np.ndarray],
                   chunks: tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray], int], *,
                   rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """expect_outputs for chunked_additive_attention; a failure that is a softmax per chunk (query, key, value,
    params and chunk_size in ``chunks``) is named as that mistake."""
    try:
        expect_outputs(ctx, "chunked_additive_attention", got, expected, first="weighted_sum", rtol=rtol, atol=atol)
    except WrongAnswer as wrong:
        ctx.expect(not agrees(got, softmax_per_chunk(*chunks), rtol=rtol, atol=atol), wrong.message,
                   hint=wrong.hint, misconception="q3.softmax_per_chunk")
        raise


def run_chunked(ctx: CheckContext, *, n: int, chunk_size: int, input_dim: int = 6, hidden_dim: int = 8,
                value_dim: int = 5) -> None:
    attention, params = additive(ctx, input_dim, hidden_dim)
    query, key, value = inputs(ctx.rng, n, input_dim, value_dim)
    ctx.name_sizes(keys=n, chunk_size=chunk_size, input_dim=input_dim, hidden_dim=hidden_dim, value_dim=value_dim)
    chunked = ctx.student.function("chunked_additive_attention")
    got = chunked(attention, Arg.tensor(query), Arg.tensor(key), Arg.tensor(value), chunk_size)
    expect_chunked(ctx, got, ref.additive_attention(query, key, value, params),
                   (query, key, value, params, chunk_size))


@check("q3", points=9, title="50 keys in chunks of 7 (the last chunk is shorter)")
def q3_uneven_chunks(ctx: CheckContext) -> None:
    run_chunked(ctx, n=50, chunk_size=7)


@check("q3", points=4, title="chunks of one key")
def q3_chunks_of_one(ctx: CheckContext) -> None:
    run_chunked(ctx, n=9, chunk_size=1)


@check("q3", points=4, title="one chunk larger than all the keys")
def q3_one_big_chunk(ctx: CheckContext) -> None:
    run_chunked(ctx, n=9, chunk_size=100)


@check("q3", points=5, visibility=HIDDEN, title="random sizes and chunk size, large scores")
def q3_random(ctx: CheckContext) -> None:
    """Several chunks, the last one shorter: a softmax per chunk, or a lost last chunk, shows on every draw."""
    chunk_size, = ctx.sizes(chunk_size=(2, 60))
    full_chunks, rest, hidden_dim, input_dim, value_dim = ctx.sizes(
        full_chunks=(1, 50), rest=(1, chunk_size), hidden_dim=(2, 12), input_dim=6, value_dim=5,
        distinct=("input_dim", "value_dim", "hidden_dim"))
    n = full_chunks * chunk_size + rest
    run_chunked(ctx, n=n, chunk_size=chunk_size, input_dim=input_dim, hidden_dim=hidden_dim, value_dim=value_dim)


@check("q3", points=8, title="a million keys under torch.no_grad() within a memory budget (no (n, hidden_dim) tensor)")
def q3_memory(ctx: CheckContext) -> None:
    """Last in q3: its memory limit stays for the rest of the question."""
    attention, params = additive(ctx, MEMORY_INPUT_DIM, MEMORY_HIDDEN_DIM)
    query, key, value = ctx.kept_draw(memory_inputs, MEMORY_KEYS, MEMORY_INPUT_DIM, 4)  # everyone's: drawn once
    chunked = ctx.student.function("chunked_additive_attention").without_grad().with_memory_budget(MEMORY_BUDGET)
    try:
        got = chunked(attention, Arg.tensor(query), Arg.tensor(key), Arg.tensor(value), 10_000)
    except StudentRaised as exc:
        if exc.exc_type in ("MemoryError", "RuntimeError") and "memory" in f"{exc.exc_type} {exc.exc_message}".lower():
            ctx.expect(False, f"chunked_additive_attention ran out of memory with {MEMORY_KEYS:,} keys in chunks of "
                              f"10,000: it may use {MEMORY_BUDGET >> 20} MB beyond its inputs, and one "
                              f"({MEMORY_KEYS:,}, {MEMORY_HIDDEN_DIM}) float32 tensor alone takes "
                              f"{MEMORY_KEYS * MEMORY_HIDDEN_DIM * 4 >> 20} MB: apply the layers to one chunk of keys "
                              f"at a time ({exc.exc_type}: {exc.exc_message[:160]})",
                       hint="chunked_additive_attention ran out of memory", misconception="q3.unchunked")
        raise
    expected = ref.additive_attention(query, key, value, params)
    # A million weights of about 1e-6 each: the tolerance must be relative, not the default absolute 1e-5.
    expect_chunked(ctx, got, expected, (query, key, value, params, 10_000), rtol=1e-3, atol=1e-10)
