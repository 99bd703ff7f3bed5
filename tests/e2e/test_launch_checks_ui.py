"""The launch form refuses, at the field, a target module the model does not have and a max length beyond its
context: such a run used to be queued and fail only once a worker loaded the model."""

import pytest


@pytest.mark.parametrize(("field", "value", "says"), [
    ("target_modules", "qkv_proj", "the model has no layer 'qkv_proj'"),
    ("max_length", "4096", "exceed the model's context of 512 tokens"),
])
def test_the_form_shows_what_the_model_cannot_take_at_the_field(page, sample_dataset, field, value, says):
    page.goto("/runs/new")
    page.select_option('[name="method"]', "lora")
    page.select_option('[name="model"]', "tunelab-tiny")
    page.select_option('[name="dataset"]', str(sample_dataset["id"]))
    page.fill(f'[name="params.{field}"]', value)
    page.click('button:has-text("Launch run")')

    error = page.wait_for_selector(f'[data-testid="field-error-params.{field}"]').text_content()
    assert says in error
    assert "/runs/new" in page.url
