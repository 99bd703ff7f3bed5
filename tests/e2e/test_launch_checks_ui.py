"""The launch form refuses, at the field, a target module the model does not have and a max length beyond its
context: such a run used to be queued and fail only once a worker loaded the model."""

import re

import pytest
from playwright.sync_api import expect


@pytest.mark.parametrize(("label", "value", "says"), [
    ("Target modules", "qkv_proj", "the model has no layer 'qkv_proj'"),
    ("Max length (tokens)", "4096", "exceed the model's context of 512 tokens"),
], ids=["target_modules", "max_length"])
def test_the_form_shows_what_the_model_cannot_take_at_the_field(page, sample_dataset, label, value, says):
    page.goto("/runs/new")
    page.get_by_label("Method", exact=True).select_option("lora")
    page.get_by_label("Base model", exact=True).select_option("tunelab-tiny")
    page.get_by_label("Dataset", exact=True).select_option(str(sample_dataset["id"]))
    field = page.get_by_label(label, exact=True)
    field.fill(value)
    page.get_by_role("button", name="Launch run").click()

    # At the field: its description, what a screen reader reads out with it.
    expect(field).to_have_accessible_description(re.compile(re.escape(says)))
    expect(field).to_have_attribute("aria-invalid", "true")
    assert "/runs/new" in page.url
