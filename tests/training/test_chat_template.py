"""The model's own chat template is kept for training; only {% generation %} markers are added where it lacks them."""

import pytest
from trl.chat_template_utils import has_generation_markers

from tests.training.test_smollm2 import smollm2_dir  # noqa: F401  (the fixture: skipped without `make models`)
from tunelab.training.models import add_generation_markers, ensure_training_chat_template

SMOLLM2_DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
ANSWERED = [*QUESTION, {"role": "assistant", "content": "Paris."}]


@pytest.fixture
def smollm2_tokenizer(smollm2_dir):  # noqa: F811
    from transformers import AutoTokenizer

    gguf = next(smollm2_dir.glob("*.gguf"))
    return AutoTokenizer.from_pretrained(str(smollm2_dir), gguf_file=gguf.name)


def render(tokenizer, messages, **kwargs) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)


def test_smollm2_keeps_its_own_template_with_generation_markers(smollm2_tokenizer):
    own = smollm2_tokenizer.chat_template
    before = {add: render(smollm2_tokenizer, QUESTION, add_generation_prompt=add) for add in (False, True)}
    answered_before = render(smollm2_tokenizer, ANSWERED)

    ensure_training_chat_template(smollm2_tokenizer)

    assert smollm2_tokenizer.chat_template != own
    assert has_generation_markers(smollm2_tokenizer.chat_template)
    for add, text in before.items():
        assert render(smollm2_tokenizer, QUESTION, add_generation_prompt=add) == text
    assert render(smollm2_tokenizer, ANSWERED) == answered_before
    prompt = render(smollm2_tokenizer, QUESTION, add_generation_prompt=True)
    assert prompt.startswith(f"<|im_start|>system\n{SMOLLM2_DEFAULT_SYSTEM}<|im_end|>\n")
    assert prompt.endswith("<|im_start|>assistant\n")

    tokens = smollm2_tokenizer.apply_chat_template(ANSWERED, tokenize=True, return_dict=True,
                                                   return_assistant_tokens_mask=True)
    trained = [token for token, mask in zip(tokens["input_ids"], tokens["assistant_masks"]) if mask]
    assert smollm2_tokenizer.decode(trained) == "Paris.<|im_end|>"


def test_markers_wrap_the_assistant_content_and_its_end_of_turn_only():
    template = (
        "{%- for m in messages %}{{- '<|' + m['role'] + '|>' + m['content'] + '</s>' + '\\n' -}}{% endfor %}"
    )
    patched = add_generation_markers(template)
    assert patched is not None
    assert "{% generation %}{{ m['content'] + '</s>' }}{% endgeneration %}{{ '\\n' }}" in patched
    assert "{%- if m['role'] == 'assistant' %}" in patched and "{% endif -%}" in patched


def test_a_template_of_another_shape_is_left_alone():
    # The content is printed in two places: which one is the assistant's is not for a pattern to guess.
    template = (
        "{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] }}"
        "{% else %}{{ message['content'] }}{% endif %}{% endfor %}"
    )
    assert add_generation_markers(template) is None
