"""String reversal with an LSTM encoder-decoder: the harness for Practical 10, Question 2. Do not change it.

The task: given a string over {a, b, c, d}, output it reversed. The encoder reads the string; the decoder writes
the reversal one character at a time, starting from BOS and stopping at EOS. With ``attention_class=None`` the
decoder sees the source only through the encoder's final state; with your ``DotProdAttention`` it also attends
over all encoder states at every step.

    model = train(DotProdAttention)            # about 6 s on one CPU core
    exact, per_char = evaluate(model, validation_strings())
    predicted, weights = translate(model, "abcdd")   # weights: (len(predicted) + 1, 5), one row per output step

The grader trains your DotProdAttention with its own copy of this file, the same configuration and seed, and has
the trained model decode strings it chooses (``grade_reversal``). Everything is seeded and training runs on one
thread: the same attention code gives the same model on your machine and in the grader (up to floating-point
differences between CPUs; a model without attention is the most sensitive to them).
"""

import dataclasses
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

ALPHABET = "abcd"
PAD, BOS, EOS = 0, 1, 2  # token ids; the letters are 3, 4, 5, 6
VOCAB_SIZE = 3 + len(ALPHABET)


@dataclass(frozen=True)
class Config:
    min_length: int = 6
    max_length: int = 14
    train_size: int = 4000
    embedding_size: int = 32
    hidden_size: int = 64
    batch_size: int = 64
    epochs: int = 5
    learning_rate: float = 3e-3
    seed: int = 10


CONFIG = Config()


# ----- data ---------------------------------------------------------------------------------------------------
def random_strings(n: int, rng: random.Random, config: Config = CONFIG) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(config.min_length, config.max_length)))
            for _ in range(n)]


def validation_strings(n: int = 500, config: Config = CONFIG) -> list[str]:
    """Strings the model never trained on (another seed than the training data)."""
    return random_strings(n, random.Random(config.seed + 1), config)


def encode(strings: list[str], *, reverse: bool = False, bos: bool = False, eos: bool = False) -> torch.Tensor:
    """A (batch, longest) tensor of token ids, padded with PAD at the end."""
    rows = [[BOS] * bos + [3 + ALPHABET.index(ch) for ch in (s[::-1] if reverse else s)] + [EOS] * eos
            for s in strings]
    width = max(len(row) for row in rows)
    return torch.tensor([row + [PAD] * (width - len(row)) for row in rows], dtype=torch.long)


def decode(tokens: torch.Tensor) -> list[str]:
    """Each row's letters up to its first EOS (or PAD)."""
    strings = []
    for row in tokens.tolist():
        letters = []
        for token in row:
            if token in (EOS, PAD):
                break
            letters.append(ALPHABET[token - 3] if token >= 3 else "?")
        strings.append("".join(letters))
    return strings


# ----- model --------------------------------------------------------------------------------------------------
class Encoder(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB_SIZE, config.embedding_size, padding_idx=PAD)
        self.lstm = nn.LSTM(config.embedding_size, config.hidden_size, batch_first=True)

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        lengths = (src != PAD).sum(1)
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(src), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        states, final = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=src.shape[1])
        return states, final  # states: (batch, S, hidden), zero at padding; final: the state after each string


class Decoder(nn.Module):
    def __init__(self, config: Config, attention: nn.Module | None) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB_SIZE, config.embedding_size, padding_idx=PAD)
        self.lstm = nn.LSTM(config.embedding_size, config.hidden_size, batch_first=True)
        self.attention = attention
        self.out = nn.Linear(config.hidden_size, VOCAB_SIZE)

    def forward(self, tgt_in: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], context: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], torch.Tensor | None]:
        outputs, state = self.lstm(self.embedding(tgt_in), state)  # s_t for every target step: (batch, T, hidden)
        weights = None
        if self.attention is not None:
            outputs, weights = self.attention(outputs, context, mask)  # the attentional states, (batch, T, S)
        return self.out(outputs), state, weights


class Seq2Seq(nn.Module):
    def __init__(self, attention_class: type[nn.Module] | None = None, config: Config = CONFIG) -> None:
        super().__init__()
        self.encoder = Encoder(config)
        attention = attention_class(config.hidden_size) if attention_class is not None else None
        self.decoder = Decoder(config, attention)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing: the decoder reads the true previous character at every step."""
        context, state = self.encoder(src)
        logits, _, weights = self.decoder(tgt_in, state, context, src != PAD)
        return logits, weights

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Decode ``steps`` tokens, each step feeding back the most likely one: tokens (batch, steps), and the
        attention weights (batch, steps, S) when the model has attention."""
        context, state = self.encoder(src)
        mask = src != PAD
        token = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
        tokens, weights = [], []
        for _ in range(steps):
            logits, state, step_weights = self.decoder(token, state, context, mask)
            token = logits.argmax(-1)
            tokens.append(token)
            if step_weights is not None:
                weights.append(step_weights)
        return torch.cat(tokens, 1), (torch.cat(weights, 1) if weights else None)


# ----- training and evaluation --------------------------------------------------------------------------------
class Adam:
    """``torch.optim.Adam`` with its defaults, computed as torch computes it on a CPU, bit for bit (the grader's tests
    hold it to that). torch's own class imports torch's compiler the first time one is made: 0.8 s in every new
    process, longer than the training a check needs."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params, self.lr, (self.beta1, self.beta2), self.eps = list(params), lr, betas, eps
        self.state: dict[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for param in self.params:
            if param.grad is None:
                continue
            if param not in self.state:
                self.state[param] = (torch.tensor(0.0), torch.zeros_like(param, memory_format=torch.preserve_format),
                                     torch.zeros_like(param, memory_format=torch.preserve_format))
            step, average, square = self.state[param]
            step += 1  # a float32 tensor, as torch keeps it
            average.lerp_(param.grad, 1 - self.beta1)
            square.mul_(self.beta2).addcmul_(param.grad, param.grad, value=1 - self.beta2)
            correction1, correction2 = 1 - self.beta1 ** step.item(), 1 - self.beta2 ** step.item()
            denominator = (square.sqrt() / correction2 ** 0.5).add_(self.eps)
            param.addcdiv_(average, denominator, value=-(self.lr / correction1))


def train(attention_class: type[nn.Module] | None = None, config: Config = CONFIG, log=print) -> Seq2Seq:
    """Train a model from scratch with a fixed seed on one thread, as the grader does: the same attention code gives
    the same model (the order of floating-point sums, and so the result, depends on the number of threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(attention_class, config, log)
    finally:
        torch.set_num_threads(threads)


def _train(attention_class: type[nn.Module] | None, config: Config, log) -> Seq2Seq:
    training = Training(attention_class, config, log)
    training.until(config.epochs)
    return training.model


class Training:
    """One training, which can stop after any batch and go on later from there: the batches are the same, in the
    same order, as one run to the end, so a model trained in steps is the model ``train`` gives."""

    def __init__(self, attention_class: type[nn.Module] | None, config: Config = CONFIG, log=print) -> None:
        self.config, self.log = config, log
        self.rng = random.Random(config.seed)
        torch.manual_seed(config.seed)
        self.strings = random_strings(config.train_size, self.rng, config)
        self.model = Seq2Seq(attention_class, config)
        self.optimizer = Adam(self.model.parameters(), lr=config.learning_rate)
        self.batches_per_epoch = -(-config.train_size // config.batch_size)
        self.done = 0  # batches trained
        self._steps = self._batches()

    def until(self, epochs: float) -> Seq2Seq:
        """Train on until ``epochs`` epochs (a fraction counts whole batches) have been trained, in eval mode after."""
        target = min(round(epochs * self.batches_per_epoch), self.config.epochs * self.batches_per_epoch)
        while self.done < target:
            next(self._steps)
        self.model.eval()
        return self.model

    def _batches(self):
        config, model = self.config, self.model
        for epoch in range(config.epochs):
            self.rng.shuffle(self.strings)
            total = 0.0
            for start in range(0, len(self.strings), config.batch_size):
                model.train()
                batch = self.strings[start:start + config.batch_size]
                src = encode(batch)
                tgt_in, tgt_out = encode(batch, reverse=True, bos=True), encode(batch, reverse=True, eos=True)
                logits, _ = model(src, tgt_in)
                loss = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), tgt_out.reshape(-1), ignore_index=PAD)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item() * len(batch)
                self.done += 1
                yield
            self.log(f"epoch {epoch + 1}/{config.epochs}: loss {total / len(self.strings):.4f}")


def predict(model: Seq2Seq, strings: list[str]) -> list[str]:
    src = encode(strings)
    tokens, _ = model.greedy(src, src.shape[1] + 1)
    return decode(tokens)


def evaluate(model: Seq2Seq, strings: list[str]) -> tuple[float, float]:
    """(exact-match accuracy, per-character accuracy) of the reversals the model writes for ``strings``."""
    predicted = predict(model, strings)
    exact = sum(p == s[::-1] for p, s in zip(predicted, strings)) / len(strings)
    right = sum(sum(a == b for a, b in zip(p, s[::-1])) for p, s in zip(predicted, strings))
    return exact, right / sum(len(s) for s in strings)


def translate(model: Seq2Seq, string: str) -> tuple[str, torch.Tensor | None]:
    """The model's reversal of one string, and its attention weights: one row per output step (the last one
    writes EOS), one column per source character."""
    tokens, weights = model.greedy(encode([string]), len(string) + 1)
    predicted = decode(tokens)[0]
    return predicted, (weights[0, :len(predicted) + 1] if weights is not None else None)


def plot_attention(weights: torch.Tensor, source: str, predicted: str) -> None:
    """A heatmap of ``translate``'s weights, source characters across, output characters down (with matplotlib;
    without it, says so: nothing else here needs it)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no picture; pip install matplotlib to see it)")
        return
    _, ax = plt.subplots(figsize=(4, 4))
    ax.imshow(weights.detach().numpy(), cmap="viridis")
    ax.set_xticks(range(len(source)), list(source))
    ax.set_yticks(range(len(predicted) + 1), [*predicted, "EOS"])
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    plt.show()


# ----- what the grader calls ----------------------------------------------------------------------------------
def grade_reversal(attention_class: type[nn.Module], strings: str, seed: int = CONFIG.seed,
                   epochs: float = CONFIG.epochs) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Train with ``attention_class`` (from ``seed``) for ``epochs`` epochs, then decode the space-separated
    ``strings``: the tokens the model writes, (n, longest + 1), and its attention weights, (n, longest + 1, longest).
    A later call with the same class and seed and more epochs goes on with the same training, so the grader can
    score it after each stage and stop once the verdict is certain; it scores the tokens itself."""
    key = (attention_class, seed)
    training = _TRAININGS.get(key)
    if training is None or training.done > round(epochs * training.batches_per_epoch):
        training = _TRAININGS[key] = Training(attention_class, dataclasses.replace(CONFIG, seed=seed),
                                              log=lambda line: None)
    threads, generator = torch.get_num_threads(), torch.get_rng_state()
    torch.set_num_threads(1)
    try:
        model = training.until(epochs)
        generator = torch.get_rng_state()  # decoding draws nothing from the training's generator
        with torch.no_grad():
            return model.greedy(encode(strings.split()), max(map(len, strings.split())) + 1)
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(generator)


_TRAININGS: dict = {}  # (attention class, seed) -> the Training grade_reversal goes on with
