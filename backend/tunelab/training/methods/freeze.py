"""Freeze tuning (LLaMA-Factory's `freeze`): the last N transformer layers are trained, every other weight is frozen;
the input embeddings and the output head on request. No adapter: the run saves a whole model, as full fine-tuning
does."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class FreezeParams(TrainingParams):
    # LLaMA-Factory trains freeze tuning at full fine-tuning's learning rate; with most of the model frozen a rate a
    # little above it is safe.
    learning_rate: float = Field(5e-5, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    trainable_layers: int = Field(
        2, ge=1, le=1024, title="Trained layers",
        description="How many of the last transformer layers train (LLaMA-Factory's default: 2); at most the "
        "model's number of layers",
    )
    train_embeddings: bool = Field(
        False, title="Train the embeddings",
        description="Train the input token embeddings too (in many small models they are tied to the output head: "
        "then both train)",
    )
    train_head: bool = Field(
        False, title="Train the output head",
        description="Train the LM head too (a reward model's new score head always trains)",
    )


def freeze_all_but_trained(model: "PreTrainedModel", params: FreezeParams) -> None:
    """Freeze every weight of `model` except the last trainable_layers transformer layers and, as asked, the input
    embeddings and the LM head. A head the base did not have (a reward model's score) always trains. A ValueError
    when the model has fewer layers."""
    from tunelab.training.model_fit import transformer_layers

    layers = transformer_layers(model)
    if params.trainable_layers > len(layers):
        raise ValueError(f"trainable_layers is {params.trainable_layers}, but the model has {len(layers)} "
                         f"transformer layers: train at most {len(layers)}")
    model.requires_grad_(False)
    for layer in layers[len(layers) - params.trainable_layers:]:
        layer.requires_grad_(True)
    if params.train_embeddings:
        model.get_input_embeddings().requires_grad_(True)
    lm_head = model.get_output_embeddings()
    if lm_head is None:
        in_base = {id(parameter) for parameter in model.base_model.parameters()}
        for parameter in model.parameters():
            if id(parameter) not in in_base:
                parameter.requires_grad_(True)
    elif params.train_head:
        lm_head.requires_grad_(True)


register_method(
    MethodSpec(
        name="freeze",
        title="Freeze tuning",
        description="Trains only the last few transformer layers (and the embeddings or the head if asked), the rest "
        "frozen: a fraction of full fine-tuning's gradients and optimizer states, and no adapter to merge.",
        params_model=FreezeParams,
        peft=False,
        prepare_model=freeze_all_but_trained,
        tiny_model_defaults={"learning_rate": 5e-3, "warmup_ratio": 0.0},
    )
)
