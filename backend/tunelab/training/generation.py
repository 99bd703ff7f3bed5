"""Generate from a base model or a run's output, one piece of text per new token, for the playground.

What a run wrote (training/engine.py) is loaded as it was trained: `adapter/` on top of the base it names, or the
full `model/`, with the run's own `tokenizer/` (its chat template). Loaded models stay in a small LRU in the
process, so a second prompt to the same models starts generating at once. Nothing here knows of the API, SQL or
Celery: the caller says what to load and where the text goes.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tunelab.training.libraries import import_libraries

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from tunelab.training.engine import TrainedModel

# Each loaded model holds its own copy of the base (PEFT injects an adapter's layers into the model it wraps).
WARM_MODELS = 4

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ModelSource:
    """What to load: the base model (a directory, GGUF or hub id), and a run's `adapter/` or full `model/` folder
    with the run's `tokenizer/`; neither folder for the base itself."""

    base: str
    adapter_dir: str | None = None
    model_dir: str | None = None
    tokenizer_dir: str | None = None
    # A run that started from other runs' weights: (kind, folder) applied on the base before its adapter, as it
    # trained (training.models.load_starting_model). Lists from JSON become tuples, so the source stays hashable.
    start_from: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "start_from", tuple(tuple(weights) for weights in self.start_from))


@dataclass(frozen=True)
class Sampling:
    max_new_tokens: int = 64
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 50
    seed: int = 0
    ignore_eos: bool = False


@dataclass
class LoadedModel:
    model: "TrainedModel"
    tokenizer: "PreTrainedTokenizerBase"


@dataclass(frozen=True)
class Generated:
    text: str
    token_count: int
    # Seconds from the call to the first new token's text, and to the end.
    first_token_s: float | None
    total_s: float


def load_model(source: ModelSource) -> LoadedModel:
    """The model `source` names, in eval mode on the first CUDA device when there is one, with the tokenizer it was
    trained with."""
    import_libraries()  # waits for the worker's warm-up import, if it is still under way
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

    from tunelab.training.models import load_starting_model
    from tunelab.training.sink import StartingWeights

    model: Any
    tokenizer: PreTrainedTokenizerBase
    if source.model_dir is not None:
        model = AutoModelForCausalLM.from_pretrained(source.model_dir)
        tokenizer = AutoTokenizer.from_pretrained(source.tokenizer_dir or source.model_dir)
    else:
        model, tokenizer = load_starting_model(
            source.base, [StartingWeights(kind=cast(Any, kind), path=Path(path)) for kind, path in source.start_from])
        if source.adapter_dir is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, source.adapter_dir)
        if source.tokenizer_dir is not None:
            tokenizer = AutoTokenizer.from_pretrained(source.tokenizer_dir)
    if torch.cuda.is_available():
        model.to("cuda")
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer)


class ModelCache:
    """The `size` models used last, loaded once each; a process-wide one is `warm_models`."""

    def __init__(self, size: int = WARM_MODELS, loader: Callable[[ModelSource], LoadedModel] = load_model) -> None:
        self.size = size
        self._loader = loader
        self._loaded: OrderedDict[ModelSource, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, source: ModelSource) -> LoadedModel:
        with self._lock:
            if source in self._loaded:
                self._loaded.move_to_end(source)
                return self._loaded[source]
            loaded = self._loader(source)
            self._loaded[source] = loaded
            while len(self._loaded) > self.size:
                self._loaded.popitem(last=False)
            return loaded

    def __contains__(self, source: ModelSource) -> bool:
        return source in self._loaded


warm_models = ModelCache()


def load_scorer(source: ModelSource) -> LoadedModel:
    """A reward run's model, which scores text (a one-output head): its base with the weights it trained (in
    `source.start_from`, its own last) applied, as an online RL run loads it to score completions."""
    import_libraries()
    import torch

    from tunelab.training.models import load_starting_model
    from tunelab.training.sink import StartingWeights

    model: Any
    model, tokenizer = load_starting_model(
        source.base, [StartingWeights(kind=cast(Any, kind), path=Path(path)) for kind, path in source.start_from],
        Path(source.tokenizer_dir) if source.tokenizer_dir else None, head="sequence_classification")
    if torch.cuda.is_available():
        model.to("cuda")
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer)


warm_scorers = ModelCache(size=1, loader=load_scorer)


def score_completion(scorer: LoadedModel, prompt: "str | Messages", completion: str) -> float:
    """The reward model's score of `completion` as the answer to `prompt`: the conversation through its chat template
    (or the prompt and the completion joined), as TRL's online trainers score a completion with a reward model."""
    import torch

    tokenizer = scorer.tokenizer
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if tokenizer.chat_template:
        text = cast(str, tokenizer.apply_chat_template([*messages, {"role": "assistant", "content": completion}],
                                                       tokenize=False))
    else:
        text = (prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in messages)) + completion
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False).to(scorer.model.device)
    with torch.no_grad():
        return float(scorer.model(**inputs).logits[0, 0])


def render_prompt(tokenizer: "PreTrainedTokenizerBase", prompt: str | Messages, chat: bool) -> str:
    """The text the model continues: the conversation through the chat template up to the assistant's answer when
    the run trained on chats (`chat`), else the prompt as it is (a conversation's turns joined)."""
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = prompt
    if chat and tokenizer.chat_template:
        return cast(str, tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in messages)


class _TextPieces:
    """A transformers streamer that hands on the text each new token adds (a token that ends inside a multi-byte
    character waits for the next), so the pieces join to exactly the decoded completion."""

    def __init__(self, tokenizer: "PreTrainedTokenizerBase", on_text: Callable[[str], None], started: float) -> None:
        import time

        self._tokenizer = tokenizer
        self._on_text = on_text
        self._clock = time.perf_counter
        self._started = started
        self._prompt_seen = False
        self.ids: list[int] = []
        self.sent = ""
        self.first_token_s: float | None = None

    def put(self, value: "torch.Tensor") -> None:
        if not self._prompt_seen:  # generate() hands the prompt over first
            self._prompt_seen = True
            return
        self.ids.extend(int(i) for i in value.reshape(-1).tolist())
        self._send(final=False)

    def end(self) -> None:
        self._send(final=True)

    def _send(self, final: bool) -> None:
        text = cast(str, self._tokenizer.decode(self.ids, skip_special_tokens=True))
        if not final and text.endswith("\ufffd"):
            return
        if text.startswith(self.sent) and len(text) > len(self.sent):
            piece, self.sent = text[len(self.sent):], text
            if self.first_token_s is None:
                self.first_token_s = self._clock() - self._started
            self._on_text(piece)


def generate(loaded: LoadedModel, prompt_text: str, sampling: Sampling,
             on_text: Callable[[str], None] = lambda _: None) -> Generated:
    """Continue `prompt_text`, calling `on_text` with each new token's text as it is generated. A seed makes a sampled
    completion reproducible."""
    import time

    import torch

    started = time.perf_counter()
    tokenizer, model = loaded.tokenizer, loaded.model
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"] or [tokenizer.bos_token_id]
    device = next(model.parameters()).device
    input_ids = torch.tensor([prompt_ids], device=device)
    pieces = _TextPieces(tokenizer, on_text, started)
    options: dict[str, Any] = {"do_sample": sampling.do_sample}
    if sampling.do_sample:
        options.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
    else:
        # Greedy: the model's own sampling defaults (generation_config.json) would only raise warnings.
        options.update(temperature=None, top_p=None, top_k=None)
    if sampling.ignore_eos:
        options["min_new_tokens"] = sampling.max_new_tokens
    torch.manual_seed(sampling.seed)
    with torch.no_grad():
        model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                       max_new_tokens=sampling.max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                       streamer=pieces, **options)
    return Generated(text=pieces.sent, token_count=len(pieces.ids), first_token_s=pieces.first_token_s,
                     total_s=time.perf_counter() - started)


def run_output(output_dir: Path, base: str, start_from: tuple[tuple[str, str], ...] = ()) -> ModelSource | None:
    """What a run trained on `base` wrote to `output_dir`, as a ModelSource: its adapter or its full model, with its
    tokenizer; None when it saved neither."""
    tokenizer = output_dir / "tokenizer"
    tokenizer_dir = str(tokenizer) if (tokenizer / "tokenizer_config.json").is_file() else None
    if (output_dir / "adapter" / "adapter_config.json").is_file():
        return ModelSource(base=base, adapter_dir=str(output_dir / "adapter"), tokenizer_dir=tokenizer_dir,
                           start_from=start_from)
    if (output_dir / "model" / "config.json").is_file():
        return ModelSource(base=base, model_dir=str(output_dir / "model"), tokenizer_dir=tokenizer_dir)
    return None
