"""Load a base model and its tokenizer from a local HF directory, a GGUF file, or a Hugging Face id."""

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    # What AutoModelForCausalLM loads, as transformers types it: a PreTrainedModel that is a GenerationMixin too.
    from transformers.models.auto.modeling_auto import _BaseModelWithGenerate as CausalLM

logger = logging.getLogger("tunelab.training")

# ChatML (SmolLM2, Qwen2 …) with the assistant turn inside {% generation %}, for templates TRL cannot patch itself.
CHATML_TRAINING_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "<|im_start|>assistant\n{% generation %}{{ message['content'] }}<|im_end|>{% endgeneration %}\n"
    "{% else %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


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
    """Give the tokenizer a chat template whose assistant turns carry {% generation %} markers, where one is known."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tokenizer.chat_template
    if not template or has_generation_markers(template):
        return
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        patched = CHATML_TRAINING_TEMPLATE if "<|im_start|>" in template else None
    if patched:
        tokenizer.chat_template = patched
    else:
        logger.warning("chat template has no {%% generation %%} markers; chat datasets cannot train on answers only")


def load_model_and_tokenizer(model_ref: str) -> "tuple[CausalLM, PreTrainedTokenizerBase]":
    """(model in float32, tokenizer with a training chat template) for a directory, GGUF file or hub id."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    from tunelab.training.base_models import ensure_hf_base

    gguf_path = find_gguf(model_ref)
    source = str(ensure_hf_base(gguf_path)) if gguf_path is not None else model_ref
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    ensure_training_chat_template(tokenizer)
    return model, tokenizer
