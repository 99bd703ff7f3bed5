"""Load a base model and its tokenizer from a local HF directory, a GGUF file, or a Hugging Face id."""

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunelab.training.registry import ModelHead, ModelLoading
from tunelab.training.sink import StartingWeights

if TYPE_CHECKING:
    import torch
    from transformers import BitsAndBytesConfig, PreTrainedTokenizerBase

    # What AutoModelForCausalLM loads, as transformers types it: a PreTrainedModel that is a GenerationMixin too.
    from transformers.models.auto.modeling_auto import _BaseModelWithGenerate as CausalLM

logger = logging.getLogger("tunelab.training")

# Conversations a patched chat template must render byte for byte as the model's own does, with and without the
# generation prompt: training then sees the text inference sends (default system prompt included).
TEMPLATE_PROBE_CHATS: list[list[dict[str, str]]] = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"},
     {"role": "assistant", "content": "Bye!"}],
]


def find_gguf(model_ref: str) -> Path | None:
    """The GGUF file `model_ref` names: the file itself, or the only .gguf in a directory without config.json."""
    path = Path(model_ref)
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and not (path / "config.json").exists():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0]
        if len(ggufs) > 1:
            raise ValueError(f"{path} holds several .gguf files; name one: {', '.join(g.name for g in ggufs)}")
    return None


def ensure_training_chat_template(tokenizer: "PreTrainedTokenizerBase") -> None:
    """Keep the model's own chat template, with {% generation %} markers around the assistant's answers added where it
    lacks them (TRL's patch for the templates it knows, else `add_generation_markers`), so that chat datasets can
    train on answers only. A template that cannot be patched without changing what it renders is kept as it is."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tokenizer.chat_template
    if not template or not isinstance(template, str) or has_generation_markers(template):
        return
    try:
        # TRL's own patches are trusted as they are: some deliberately render tool turns differently.
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        patched = add_generation_markers(template)
        patched = patched if patched is not None and renders_like(tokenizer, patched) else None
    if patched:
        tokenizer.chat_template = patched
    else:
        logger.warning("chat template has no {%% generation %%} markers; chat datasets cannot train on answers only")


_LOOP_VARIABLE = re.compile(r"\{%-?\s*for\s+(\w+)\s+in\s+(?:loop_)?messages\b")
_OUTPUT_EXPRESSION = re.compile(r"\{\{(?P<open>-?)(?P<expr>(?:(?!\}\}).)*?)(?P<close>-?)\}\}", re.DOTALL)


def _split_concatenation(expression: str) -> list[str]:
    """The terms of a Jinja `a + b + c` expression, splitting only on `+` outside string literals and brackets."""
    terms, depth, quote, current = [], 0, "", ""
    for char in expression:
        if quote:
            quote = "" if char == quote and not current.endswith("\\") else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "+" and depth == 0:
            terms.append(current.strip())
            current = ""
            continue
        current += char
    terms.append(current.strip())
    return terms


def add_generation_markers(template: str) -> str | None:
    """The template with the assistant's content (and the end-of-turn string right after it) inside {% generation %},
    for templates that print each message in one `{{ ... + message['content'] + ... }}` expression inside their loop
    over the messages (SmolLM2, ChatML-style); None for any other shape. Rendering is unchanged: only the assistant
    branch gains the markers, which print nothing."""
    loop = _LOOP_VARIABLE.search(template)
    if loop is None:
        return None
    variable = loop.group(1)
    content = re.compile(rf"^{variable}(\[\s*['\"]content['\"]\s*\]|\.content)$")
    matches = [m for m in _OUTPUT_EXPRESSION.finditer(template, loop.end())
               if any(content.match(term) for term in _split_concatenation(m.group("expr")))]
    if len(matches) != 1:
        return None
    match = matches[0]
    terms = _split_concatenation(match.group("expr"))
    at = next(i for i, term in enumerate(terms) if content.match(term))
    head, tail = terms[:at], terms[at + 1 :]
    # The end-of-turn string is part of the answer: the model learns to stop.
    answer_end = tail[:1] if tail and tail[0][:1] in "'\"" and tail[0][1:-1].strip() else []
    after = tail[len(answer_end) :]
    assistant_branch = (
        (f"{{{{ {' + '.join(head)} }}}}" if head else "")
        + f"{{% generation %}}{{{{ {' + '.join([terms[at], *answer_end])} }}}}{{% endgeneration %}}"
        + (f"{{{{ {' + '.join(after)} }}}}" if after else "")
    )
    replacement = (
        f"{{%{match.group('open')} if {variable}['role'] == 'assistant' %}}{assistant_branch}"
        f"{{% else %}}{{{{ {match.group('expr').strip()} }}}}{{% endif {match.group('close')}%}}"
    )
    return template[: match.start()] + replacement + template[match.end() :]


def renders_like(tokenizer: "PreTrainedTokenizerBase", patched: str) -> bool:
    """Whether `patched` renders every probe conversation exactly as the tokenizer's own template does."""
    for messages in TEMPLATE_PROBE_CHATS:
        for add_generation_prompt in (False, True):
            try:
                own = tokenizer.apply_chat_template(messages, tokenize=False,
                                                    add_generation_prompt=add_generation_prompt)
            except Exception:  # noqa: BLE001  (a template may refuse a role order; the patch must refuse it too)
                own = None
            try:
                theirs = tokenizer.apply_chat_template(messages, tokenize=False, chat_template=patched,
                                                       add_generation_prompt=add_generation_prompt)
            except Exception:  # noqa: BLE001
                theirs = None
            if own != theirs:
                return False
    return True


def quantization_config(loading: ModelLoading, dtype: "torch.dtype") -> "BitsAndBytesConfig | None":
    """bitsandbytes' 4-bit NF4 with double quantization, computing in the load dtype; None when not quantized."""
    if loading.quantization is None:
        return None
    import torch
    from transformers import BitsAndBytesConfig

    if not torch.cuda.is_available():
        raise ValueError(f"{loading.quantization} quantization (QLoRA) needs a CUDA GPU")
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=dtype)


def load_tokenizer(model_ref: str) -> "PreTrainedTokenizerBase":
    """The tokenizer a run on `model_ref` trains with, without loading the model and without reaching the hub. A GGUF
    base trains from its Hugging Face copy (see base_models), which saves the tokenizer read from the GGUF's metadata:
    read from the copy when it was made, else from the GGUF itself (no weights are read either way)."""
    from transformers import AutoTokenizer

    from tunelab.training.base_models import hf_base_dir

    gguf_path = find_gguf(model_ref)
    if gguf_path is None:
        return AutoTokenizer.from_pretrained(model_ref, local_files_only=True)
    hf_copy = hf_base_dir(gguf_path)
    if (hf_copy / "config.json").is_file():
        return AutoTokenizer.from_pretrained(str(hf_copy), local_files_only=True)
    return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True)


def model_class(head: ModelHead) -> "Any":
    """The Auto class that builds a model with `head`: a causal LM, or a sequence classifier (a reward model)."""
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    return AutoModelForCausalLM if head == "causal_lm" else AutoModelForSequenceClassification


def _head_arguments(head: ModelHead) -> dict[str, int]:
    # A reward model has one output, the sequence's score; its head is new, drawn from the seed set before loading.
    return {} if head == "causal_lm" else {"num_labels": 1}


def load_model_and_tokenizer(model_ref: str, loading: ModelLoading | None = None, head: ModelHead = "causal_lm",
                             ) -> "tuple[CausalLM, PreTrainedTokenizerBase]":
    """(model as `loading` asks, float32 by default; tokenizer with a training chat template) for a directory, GGUF
    file or hub id; a sequence classifier with one output (a reward model) on that base when `head` asks for it."""
    import torch
    from transformers import AutoTokenizer

    from tunelab.training.base_models import ensure_hf_base

    gguf_path = find_gguf(model_ref)
    # A GGUF base trains from its Hugging Face copy, which its adapters then record as their base (see base_models).
    source = str(ensure_hf_base(gguf_path)) if gguf_path is not None else model_ref
    tokenizer = AutoTokenizer.from_pretrained(source)
    loading = loading or ModelLoading()
    dtype = getattr(torch, loading.dtype)
    model = model_class(head).from_pretrained(source, dtype=dtype, **_head_arguments(head),
                                               quantization_config=quantization_config(loading, dtype))
    ensure_training_chat_template(tokenizer)
    return model, tokenizer


def load_starting_model(model_ref: str, start_from: Sequence[StartingWeights] = (),
                        tokenizer_dir: Path | None = None, loading: ModelLoading | None = None,
                        head: ModelHead = "causal_lm") -> "tuple[CausalLM, PreTrainedTokenizerBase]":
    """The model a run starts from: the base (as load_model_and_tokenizer loads it) with other runs' weights applied
    in order — an adapter merged into the weights (PEFT's merge_and_unload: the next method trains on top of the
    result, and a PEFT objective's reference, the model with its own adapter disabled, is this model), a full model
    loaded in their place — and the tokenizer the last of those runs trained with. A reward model (`head`) starts
    from the same weights with a new score head in place of the LM head: an SFT adapter's layers merge into it."""
    import torch
    from transformers import AutoTokenizer

    model, tokenizer = load_model_and_tokenizer(model_ref, loading, head)
    loading = loading or ModelLoading()
    dtype = getattr(torch, loading.dtype)
    for weights in start_from:
        if weights.kind == "model":
            del model
            model = model_class(head).from_pretrained(str(weights.path), dtype=dtype, **_head_arguments(head),
                                                       quantization_config=quantization_config(loading, dtype))
        else:
            from peft import PeftConfig, PeftModel

            adapter_config = PeftConfig.from_pretrained(str(weights.path))
            if head != "causal_lm" and adapter_config.task_type == "CAUSAL_LM":
                # A causal LM's adapter (an SFT run's) merges into a reward model's layers: PEFT's causal-LM wrapper
                # would ask the classifier for generation methods it does not have.
                adapter_config.task_type = None
            model = PeftModel.from_pretrained(model, str(weights.path), config=adapter_config).merge_and_unload()
            # PEFT loads an adapter for inference, freezing every weight, and merging keeps them frozen: as loaded
            # from a folder, the merged model's weights take gradients again (full fine-tuning trains them all; a
            # method that trains fewer freezes the rest itself).
            for parameter in model.parameters():
                if parameter.dtype.is_floating_point:
                    parameter.requires_grad_(True)
    if tokenizer_dir is not None:
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        ensure_training_chat_template(tokenizer)
    return model, tokenizer
