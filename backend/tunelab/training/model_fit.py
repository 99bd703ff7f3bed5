"""Whether a method's params fit a model, read from the model built on the meta device (no weight is read): the
target modules it names must be layers of the model, the layers freeze tuning trains must be in it, and a sequence
must fit the model's context."""

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunelab.training.estimator import meta_model, read_model_config
from tunelab.training.libraries import import_libraries

if TYPE_CHECKING:
    from torch import nn
    from transformers import PreTrainedModel

ALL_LINEAR = "all-linear"  # PEFT's shorthand for every linear layer but the output head: fits any model


@dataclass(frozen=True)
class ModelLayers:
    """The layers a PEFT method can adapt (linear, embedding and convolution layers), by their full dotted names."""

    names: tuple[str, ...]

    @property
    def short_names(self) -> list[str]:
        """The distinct last parts of the names (q_proj, down_proj, ...): what target_modules usually lists."""
        return sorted({name.rsplit(".", 1)[-1] for name in self.names})


@functools.lru_cache(maxsize=32)
def model_layers(model_path: str) -> ModelLayers:
    import_libraries()
    import torch
    from transformers.pytorch_utils import Conv1D

    adaptable = (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, Conv1D)
    return ModelLayers(tuple(name for name, module in meta_model(model_path).named_modules()
                             if isinstance(module, adaptable)))


def unknown_target_modules(model_path: str, target_modules: list[str] | str) -> list[str]:
    """Those of `target_modules` that match no layer of the model, by PEFT's rules: a name matches a layer named so
    or whose dotted name ends with `.name`; a single string is a regular expression the whole name must match."""
    if target_modules == ALL_LINEAR:
        return []
    names = model_layers(model_path).names
    if isinstance(target_modules, str):
        return [] if any(re.fullmatch(target_modules, name) for name in names) else [target_modules]
    return [target for target in target_modules
            if not any(name == target or name.endswith(f".{target}") for name in names)]


def context_length(model_path: str) -> int | None:
    """The longest sequence the model's positions cover (max_position_embeddings); None when its config has none."""
    value = getattr(read_model_config(model_path).get_text_config(), "max_position_embeddings", None)
    return int(value) if isinstance(value, int) else None


def transformer_layers(model: "PreTrainedModel") -> "nn.ModuleList":
    """The model's stack of transformer blocks: its decoder's `layers` (Llama, Mistral, Qwen …), else the first module
    list as long as its config's num_hidden_layers (GPT-2's `h` …). A ValueError if it has neither."""
    import torch

    decoder = model.get_decoder()
    layers = getattr(decoder, "layers", None)
    if isinstance(layers, torch.nn.ModuleList):
        return layers
    count = getattr(model.config.get_text_config(), "num_hidden_layers", None)
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return module
    raise ValueError(f"cannot find the transformer layers of {type(model).__name__}: no module list of its "
                     f"{count} layers")


@functools.lru_cache(maxsize=32)
def layer_count(model_path: str) -> int:
    """How many transformer layers the model has, counted as freeze tuning counts them."""
    return len(transformer_layers(meta_model(model_path)))
