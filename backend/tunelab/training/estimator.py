"""Memory a run needs before it starts, from exact parameter counts and the terms of the ZeRO and Megatron papers.

Parameter counts come from the model built on the `meta` device from its config, with the method's PEFT config
applied (or freeze tuning's freezing): the same tensors the engine will train, without reading a weight. Bytes per
parameter:

- frozen base weights in the dtype the method loads them in (the run's precision for PEFT methods: fp32 4 bytes,
  bf16/fp16 2); a 4-bit (NF4) method stores the frozen linear weights of the blocks at half a byte plus its
  quantization constants;
- trained parameters in fp32 (full fine-tuning keeps fp32 weights and mixed precision runs under autocast; PEFT
  upcasts adapter weights to fp32), their fp32 gradients, and AdamW's two fp32 moments plus a step count per tensor.

Activations are what autograd saves for the backward pass, counted by running the model's forward on the meta device
(shapes, no memory; attention as a fused kernel keeps it) with the method applied, once with one layer and once with two: the difference is one layer's,
the rest is the embeddings, the head and the loss. So they follow the architecture (Llama's SwiGLU MLP, grouped-query
attention, RMSNorm in fp32) and the method (a frozen linear layer keeps no input for a weight gradient; a full
fine-tuning's does). With gradient checkpointing each layer keeps its input and one layer is recomputed at a time.
Freeze tuning's layers are traced as full fine-tuning's, and only those from its first trained layer on count: a
frozen layer below it is never differentiated.
Where the forward cannot run on the meta device (4-bit weights), the per-layer count of Korthikanti et al. (2022)
stands in: s·b·h·(34 + 5·a·s/h) 2-byte elements, the attention scores only where the attention is not fused.

The process's peak also holds what the backward pass allocates and frees (the logits' gradient beside the saved
log-probabilities: two logits-sized fp32 tensors) and, on a CPU, the runtime's own memory (interpreter, torch,
transformers), which the caller measures on earlier runs. Data parallel with ZeRO stage 1/2/3 divides the optimizer
states / + gradients / + weights by the number of processes.

An objective that samples its own completions (online RL) trains on prompt + completion sequences, and before each
training step writes them with a KV cache: 2 (keys, values) × layers × key/value heads × head dim × sequence × the
completions written at once, in the compute dtype. The cache is freed before the forward of the loss, so the peak holds
the larger of it and the training step's activations. A reward model such an objective scores with is a frozen
sequence classifier on the same base, loaded beside the policy.
"""

import functools
import json
import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from tunelab.training.libraries import import_libraries
from tunelab.training.models import find_gguf, model_class
from tunelab.training.params import TrainingParams
from tunelab.training.registry import (
    MethodSpec,
    ModelHead,
    ModelLoading,
    ObjectiveSpec,
    get_method,
    peft_task_type,
)

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel

logger = logging.getLogger(__name__)

ZERO_STAGES = (0, 1, 2, 3)
FP32_BYTES = 4
ADAM_MOMENT_BYTES = 2 * FP32_BYTES  # exp_avg and exp_avg_sq
ADAM_STEP_BYTES = 4  # one float32 step count per parameter tensor
# bitsandbytes NF4 with double quantization: 4 bits per weight, plus one 8-bit absmax per 64-weight block (the
# fp32 constants of the second quantization, one per 256 blocks, are under a hundredth of that).
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64
# The activation terms count 2-byte elements; an fp32 run stores 4-byte ones.
ACTIVATION_SCALE = {"fp32": 2, "bf16": 1, "fp16": 1}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# Attention kernels that compute the scores block by block and keep only their softmax statistics.
FUSED_ATTENTION = ("sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")
# Output heads bitsandbytes leaves unquantized (transformers skips the output embeddings when it quantizes).
UNQUANTIZED_HEADS = ("lm_head",)


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs to know about a model and method: parameter counts by kind, and the dimensions."""

    total_params: int
    trainable_params: int
    trainable_tensors: int
    frozen_linear_params: int  # frozen weights of the blocks' linear layers: what a 4-bit method quantizes
    frozen_other_params: int  # the remaining frozen parameters (embeddings, norms, the output head)
    hidden_size: int
    num_layers: int
    num_heads: int
    vocab_size: int
    stores_attention_scores: bool  # eager attention keeps the a·s² scores for the backward; fused kernels do not
    # The layers the backward pass goes through, which keep activations for it: all of them, but for freeze tuning
    # from the first trained layer on (a frozen layer below it needs no gradient).
    layers_with_gradient: int


class MemoryEstimate(TypedDict):
    total_params: int
    trainable_params: int
    weights_bytes: int
    reference_weights_bytes: int  # a preference objective's frozen reference model, when it keeps one
    reward_model_weights_bytes: int  # the frozen reward model an online RL run scores its completions with
    gradients_bytes: int
    optimizer_states_bytes: int
    activations_bytes: int  # with the run's gradient_checkpointing setting
    activations_with_checkpointing_bytes: int
    activations_without_checkpointing_bytes: int
    activations_traced: bool  # counted from the forward on the meta device (else the per-layer formula)
    backward_temporaries_bytes: int  # allocated and freed within the backward pass: part of the peak
    generation_kv_cache_bytes: int  # the KV cache of sampling completions (online RL): freed before the training step
    sequence_length: int  # tokens of the sequences the activations are counted for (prompt + completion for online RL)
    per_device_bytes: dict[int, int]  # ZeRO stage (0 = plain DDP) -> total on each device


@functools.lru_cache(maxsize=32)
def read_model_config(model_path: str) -> "PretrainedConfig":
    """The model's config, from config.json or, for a GGUF base, from the GGUF file's metadata (read once)."""
    import_libraries()
    from transformers import AutoConfig

    gguf_path = find_gguf(model_path)
    if gguf_path is not None:
        return AutoConfig.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    return AutoConfig.from_pretrained(model_path)


def meta_model(model_path: str, head: ModelHead = "causal_lm") -> "PreTrainedModel":
    """The model of `model_path` built on the meta device from its config: every module and shape, no weight read. A
    reward model (`head`) has a one-output score head in place of the LM head."""
    import_libraries()
    import torch

    with torch.device("meta"):
        return model_class(head).from_config(_head_config(read_model_config(model_path), head))


@functools.lru_cache(maxsize=32)
def frozen_model_params(model_path: str, head: ModelHead) -> int:
    """Parameters of the model of `model_path` with `head`, loaded whole and frozen (a reward model that scores)."""
    return sum(parameter.numel() for parameter in meta_model(model_path, head).parameters())


def kv_cache_bytes(model_path: str, precision: str, sequence_length: int, sequences: int) -> int:
    """The keys and values generation caches for `sequences` sequences of `sequence_length` tokens, in the compute
    dtype: 2 × layers × key/value heads × head dim per token (grouped-query attention caches fewer heads)."""
    config = read_model_config(model_path).get_text_config()
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(config, "head_dim", None) or int(config.hidden_size) // heads)
    dtype_bytes = DTYPE_BYTES[COMPUTE_DTYPES[precision]]
    return 2 * int(config.num_hidden_layers) * kv_heads * head_dim * dtype_bytes * sequence_length * sequences


def _head_config(config: Any, head: ModelHead) -> Any:
    if head == "causal_lm":
        return config
    import copy

    config = copy.deepcopy(config)
    config.num_labels = 1
    # The classifier finds each sequence's last token by its padding; the trainer sets the tokenizer's pad id.
    if config.get_text_config().pad_token_id is None:
        config.get_text_config().pad_token_id = 0
    return config


def _peft_config(method: MethodSpec, params: TrainingParams, model_path: str, head: ModelHead) -> Any:
    tokenizer_dir = model_path if Path(model_path).is_dir() else str(Path(model_path).parent)
    assert method.build_peft_config is not None
    peft_config = method.build_peft_config(params, tokenizer_dir)
    peft_config.task_type = peft_task_type(head)  # as the engine sets it
    return peft_config


def _shape_params(method: MethodSpec, params: TrainingParams) -> str:
    """The method's own params as a cache key: neither the shared training params nor an objective's change the
    shape of a tensor."""
    own_fields = method.params_model.model_fields.keys() - TrainingParams.model_fields.keys()
    own = {name: value for name, value in params.model_dump(mode="json").items() if name in own_fields}
    return json.dumps(own, sort_keys=True)


def model_shape(model_path: str, method: MethodSpec, params: TrainingParams, head: ModelHead = "causal_lm",
                ) -> ModelShape:
    """Exact parameter counts of `model_path` trained with `method`, from a model built on the meta device (with a
    reward model's score head for `head` sequence_classification)."""
    return _model_shape(model_path, method.name, _shape_params(method, params), head)


# Building the meta model takes about a second on a real model; a launch form asks again at every keystroke.
@functools.lru_cache(maxsize=128)
def _model_shape(model_path: str, method_name: str, shape_params: str, head: ModelHead) -> ModelShape:
    import torch

    method = get_method(method_name)
    config = read_model_config(model_path)
    params = method.params_model.model_validate(json.loads(shape_params))
    if getattr(params, "prompt_tuning_init", None) == "text":
        # Initialising from a text only sets the soft prompt's values (and needs a tokenizer on disk).
        params = params.model_copy(update={"prompt_tuning_init": "random", "prompt_tuning_init_text": None})
    model: torch.nn.Module = meta_model(model_path, head)
    text_config = config.get_text_config()
    layers_with_gradient = int(text_config.num_hidden_layers)
    if method.prepare_model is not None:
        method.prepare_model(model, params)  # as the engine does: freeze tuning's frozen layers
        layers_with_gradient = _layers_with_gradient(model)
    if method.build_peft_config is not None:
        from peft import get_peft_model

        with torch.device("meta"):
            model = get_peft_model(model, _peft_config(method, params, model_path, head))
    frozen_linear_names = {
        f"{name}.weight" for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and not name.endswith(UNQUANTIZED_HEADS)
    }
    trainable = trainable_tensors = frozen_linear = frozen_other = 0
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            trainable += parameter.numel()
            trainable_tensors += 1
        elif name in frozen_linear_names:
            frozen_linear += parameter.numel()
        else:
            frozen_other += parameter.numel()
    return ModelShape(
        total_params=trainable + frozen_linear + frozen_other,
        trainable_params=trainable,
        trainable_tensors=trainable_tensors,
        frozen_linear_params=frozen_linear,
        frozen_other_params=frozen_other,
        hidden_size=int(text_config.hidden_size),
        num_layers=int(text_config.num_hidden_layers),
        num_heads=int(text_config.num_attention_heads),
        vocab_size=int(text_config.vocab_size),
        stores_attention_scores=getattr(model.config, "_attn_implementation", None) not in FUSED_ATTENTION,
        layers_with_gradient=layers_with_gradient,
    )


def _layers_with_gradient(model: Any) -> int:
    """The transformer layers a gradient goes through: from the first that holds a trained weight on, or every one
    when the input embeddings train or no layer does."""
    from tunelab.training.model_fit import transformer_layers

    layers = transformer_layers(model)
    if any(parameter.requires_grad for parameter in model.get_input_embeddings().parameters()):
        return len(layers)
    first = next((index for index, layer in enumerate(layers)
                  if any(parameter.requires_grad for parameter in layer.parameters())), None)
    return len(layers) if first is None else len(layers) - first


@dataclass(frozen=True)
class SavedActivations:
    """Bytes autograd keeps for the backward pass of one micro-batch."""

    per_layer: int  # one transformer layer's
    outside_layers: int  # the embeddings, the final norm, the head and the loss
    layer_input: int  # what a checkpointed layer keeps: its input hidden states

    def total(self, num_layers: int, gradient_checkpointing: bool) -> int:
        if gradient_checkpointing:  # every layer's input, and the one layer recomputed during the backward
            return num_layers * self.layer_input + self.per_layer + self.outside_layers
        return num_layers * self.per_layer + self.outside_layers


COMPUTE_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def traced_activations(model_path: str, method: MethodSpec, params: TrainingParams, sequence_length: int,
                       micro_batch: int, head: ModelHead = "causal_lm") -> SavedActivations | None:
    """What autograd saves for one micro-batch, from the forward of a one- and a two-layer copy of the model on the
    meta device with the method applied; None where that forward cannot run (4-bit weights, an architecture that
    needs real tensors)."""
    if method.model_loading(method, params).quantization is not None:
        return None
    # The tokens fed in: a prompt-learning method puts its virtual tokens in front of them itself.
    input_length = params.max_length
    return _traced_activations(model_path, method.name, _shape_params(method, params), params.precision,
                               input_length, sequence_length, micro_batch, head)


@functools.lru_cache(maxsize=256)
def _traced_activations(model_path: str, method_name: str, shape_params: str, precision: str, input_length: int,
                        sequence_length: int, micro_batch: int, head: ModelHead) -> SavedActivations | None:
    import torch

    method = get_method(method_name)
    params = method.params_model.model_validate(json.loads(shape_params))
    if getattr(params, "prompt_tuning_init", None) == "text":
        params = params.model_copy(update={"prompt_tuning_init": "random", "prompt_tuning_init_text": None})
    dtype = getattr(torch, COMPUTE_DTYPES[precision])
    try:
        one, two = (_saved_bytes(model_path, method, params, layers, dtype, input_length, micro_batch, head)
                    for layers in (1, 2))
    except Exception:  # noqa: BLE001 - any failure of a forward on meta tensors: the formula stands in
        logger.info("could not trace the activations of %s on the meta device", model_path, exc_info=True)
        return None
    hidden_size = int(read_model_config(model_path).get_text_config().hidden_size)
    return SavedActivations(per_layer=two - one, outside_layers=2 * one - two,
                            layer_input=sequence_length * micro_batch * hidden_size * dtype.itemsize)


def _saved_bytes(model_path: str, method: MethodSpec, params: TrainingParams, layers: int, dtype: "torch.dtype",
                 sequence_length: int, micro_batch: int, head: ModelHead) -> int:
    import copy

    import torch

    config = _head_config(copy.deepcopy(read_model_config(model_path)), head)
    config.get_text_config().num_hidden_layers = layers
    with torch.device("meta"):
        model = model_class(head).from_config(config, dtype=dtype, attn_implementation=_fused_attention_name())
        if method.build_peft_config is not None:
            from peft import get_peft_model

            model = get_peft_model(model, _peft_config(method, params, model_path, head))
    model.train()
    parameters = {id(p) for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        # A weight (or a view of one) the backward reads is the model state, counted apart; a tensor saved by several
        # operations is kept once.
        base = tensor._base if tensor._base is not None else tensor
        if id(base) not in parameters:
            saved[id(base)] = max(saved.get(id(base), 0), base.numel() * base.element_size())
        return tensor

    input_ids = torch.zeros((micro_batch, sequence_length), dtype=torch.long, device="meta")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        # A reward model's loss compares two scores per pair: nothing the size of a sequence, so none is traced.
        model(input_ids=input_ids, **({"labels": input_ids} if head == "causal_lm" else {}))
    return sum(saved.values())


@functools.cache
def _fused_attention_name() -> str:
    """An attention implementation for the meta device that keeps what a fused kernel (SDPA's flash or efficient
    kernel, FlashAttention) keeps for its backward — the query, key and value, the output and the log-sum-exp —
    where SDPA on the meta device falls back to the math path and keeps the a·s² scores a real run never stores."""
    import torch
    from transformers import AttentionInterface

    class FusedAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(query)
            log_sum_exp = query.new_empty(query.shape[:-1], dtype=torch.float32)
            ctx.save_for_backward(query, key, value, out, log_sum_exp)
            return out

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> None:
            raise NotImplementedError("only traced, never trained")

    def fused(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any,
              **kwargs: Any) -> tuple[torch.Tensor, None]:
        return FusedAttention.apply(query, key, value).transpose(1, 2).contiguous(), None

    name = "tunelab_traced_fused"
    AttentionInterface.register(name, fused)
    return name


def activation_bytes(shape: ModelShape, sequence_length: int, micro_batch: int, precision: str,
                     gradient_checkpointing: bool, outputs_per_token: int | None = None) -> int:
    """Activations one device keeps for the backward pass of one micro-batch, by the per-layer formula (where the
    forward cannot be traced)."""
    s, b, h, a = sequence_length, micro_batch, shape.hidden_size, shape.num_heads
    scale = ACTIVATION_SCALE[precision]
    attention_scores = 5 * a * s / h if shape.stores_attention_scores else 0
    full_layer = s * b * h * (34 + attention_scores) * scale
    # fp32 logits are their own fp32 copy; half-precision ones are copied to fp32 for the loss.
    logit_bytes = FP32_BYTES * 3 if precision == "fp32" else 2 + FP32_BYTES * 3
    logits = s * b * (shape.vocab_size if outputs_per_token is None else outputs_per_token) * logit_bytes
    if gradient_checkpointing:
        kept = shape.layers_with_gradient * 2 * s * b * h * scale + full_layer
    else:
        kept = shape.layers_with_gradient * full_layer
    return int(kept + logits)


def estimate_memory(model_path: str, method: MethodSpec, params: TrainingParams, num_processes: int = 1,
                    objective: ObjectiveSpec | None = None) -> MemoryEstimate:
    """Weights, gradients, optimizer states and activations of a run, and its total per device for each ZeRO stage.
    The objective (SFT when None) says how many sequences an example runs, whether a reference model is kept, whether
    completions are sampled (params.max_length bounds their prompts then) and whether a reward model scores them."""
    head = objective.model_head if objective is not None else "causal_lm"
    completion_length = _completion_length(params, objective)
    if completion_length:
        # The policy trains on each prompt followed by its sampled completion.
        params = params.model_copy(update={"max_length": params.max_length + completion_length})
    shape = model_shape(model_path, method, params, head)
    # A causal LM's head gives a logit per vocabulary entry for each token; a reward model's, one score.
    outputs_per_token = shape.vocab_size if head == "causal_lm" else 1
    precision = params.precision
    loading = method.model_loading(method, params)
    frozen_bytes = DTYPE_BYTES[loading.dtype]
    frozen_linear_bytes = NF4_BYTES_PER_PARAM if loading.quantization == "nf4" else frozen_bytes
    weights = int(shape.trainable_params * FP32_BYTES + shape.frozen_linear_params * frozen_linear_bytes
                  + shape.frozen_other_params * frozen_bytes)
    gradients = shape.trainable_params * FP32_BYTES
    optimizer_states = shape.trainable_params * ADAM_MOMENT_BYTES + shape.trainable_tensors * ADAM_STEP_BYTES
    # A reference for a method without an adapter to disable is the base loaded once more, as the method loads it.
    keeps_reference = objective is not None and objective.keeps_reference(params) and not method.peft
    reference_weights = shape.total_params * frozen_bytes if keeps_reference else 0
    reward_run_param = objective.reward_run_param if objective is not None else None
    scores_with_reward_model = reward_run_param is not None and getattr(params, reward_run_param, None) is not None
    # The engine loads the reward model as load_model_and_tokenizer does by default (fp32), whatever the precision.
    reward_model_weights = (frozen_model_params(model_path, "sequence_classification")
                            * DTYPE_BYTES[ModelLoading().dtype] if scores_with_reward_model else 0)
    # Prompt-learning methods put their virtual tokens in front of every sequence.
    sequence_length = params.max_length + int(getattr(params, "num_virtual_tokens", 0) or 0)
    micro_batch = params.per_device_train_batch_size * (objective.sequences_per_example if objective else 1)
    traced = traced_activations(model_path, method, params, sequence_length, micro_batch, head)
    if traced is not None:
        # Traced with every layer trained (freeze tuning's trained layers keep what full fine-tuning's do).
        with_checkpointing = traced.total(shape.layers_with_gradient, True)
        without_checkpointing = traced.total(shape.layers_with_gradient, False)
    else:
        with_checkpointing = activation_bytes(shape, sequence_length, micro_batch, precision, True, outputs_per_token)
        without_checkpointing = activation_bytes(shape, sequence_length, micro_batch, precision, False,
                                                 outputs_per_token)
    activations = with_checkpointing if params.gradient_checkpointing else without_checkpointing
    # The loss's backward holds the logits' fp32 gradient beside their saved log-probabilities (the formula's logits
    # term counts those copies already).
    temporaries = 2 * sequence_length * micro_batch * outputs_per_token * FP32_BYTES if traced is not None else 0
    # TRL's online trainers write the completions of every accumulation step of an optimizer step at once
    # (steps_per_generation defaults to gradient_accumulation_steps); their batch counts completions.
    kv_cache = (kv_cache_bytes(model_path, precision, sequence_length,
                               params.per_device_train_batch_size * params.gradient_accumulation_steps)
                if completion_length else 0)
    per_device = {
        stage: sharded_total(weights + reference_weights + reward_model_weights, gradients, optimizer_states,
                             max(activations + temporaries, kv_cache), stage, num_processes)
        for stage in ZERO_STAGES
    }
    return {
        "total_params": shape.total_params,
        "trainable_params": shape.trainable_params,
        "weights_bytes": weights,
        "reference_weights_bytes": reference_weights,
        "reward_model_weights_bytes": reward_model_weights,
        "gradients_bytes": gradients,
        "optimizer_states_bytes": optimizer_states,
        "activations_bytes": activations,
        "activations_with_checkpointing_bytes": with_checkpointing,
        "activations_without_checkpointing_bytes": without_checkpointing,
        "activations_traced": traced is not None,
        "backward_temporaries_bytes": temporaries,
        "generation_kv_cache_bytes": kv_cache,
        "sequence_length": sequence_length,
        "per_device_bytes": per_device,
    }


def _completion_length(params: TrainingParams, objective: ObjectiveSpec | None) -> int:
    """The most tokens the objective samples after each prompt; 0 for one that samples nothing."""
    if objective is None or objective.completion_length_param is None:
        return 0
    return int(getattr(params, objective.completion_length_param))


def sharded_total(weights: int, gradients: int, optimizer_states: int, activations: int, zero_stage: int,
                  num_processes: int) -> int:
    """Bytes on each of `num_processes` devices: ZeRO 1 shards the optimizer states, 2 the gradients too, 3 the
    weights too; activations belong to each device's own micro-batch."""
    shards = max(1, num_processes)

    def part(size: int, sharded_from: int) -> float:
        return size / shards if zero_stage >= sharded_from else size

    return int(part(optimizer_states, 1) + part(gradients, 2) + part(weights, 3) + activations)


def sequence_length_for_memory(sequence_lengths: Sequence[int] | None, params: TrainingParams,
                               objective: ObjectiveSpec | None = None) -> int:
    """The longest sequence a batch of the run can hold: a batch is padded to its longest row, so the dataset's
    longest row cut at max_length; max_length itself when the rows are unknown or the objective packs them into
    full blocks. For an objective that samples completions, the longest prompt: its trainer cuts none (the
    completion is added by estimate_memory)."""
    packs = objective is not None and (objective.packs_rows or getattr(params, "packing", False))
    if packs or not sequence_lengths:
        return params.max_length
    if objective is not None and objective.completion_length_param is not None:
        return max(sequence_lengths)
    return min(params.max_length, max(sequence_lengths))


def tokens_per_example(sequence_lengths: Sequence[int], params: TrainingParams,
                       objective: ObjectiveSpec | None = None) -> float:
    """Mean training tokens of one example, from the token lengths of the sequences the trainer builds (a preference
    example is two): each cut at max_length, and a full max_length when the objective packs rows into blocks. An
    objective that samples its completions trains on each prompt, uncut, followed by up to its completion length (an
    upper bound). Without the lengths, the bound: max_length (plus that completion length)."""
    if objective is not None and (objective.packs_rows or getattr(params, "packing", False)):
        return float(params.max_length * objective.sequences_per_example)
    completion = _completion_length(params, objective)
    if not sequence_lengths:
        return float(params.max_length + completion)
    if completion:
        return sum(sequence_lengths) / len(sequence_lengths) + completion
    per_sequence = sum(min(length, params.max_length) for length in sequence_lengths) / len(sequence_lengths)
    return per_sequence * (objective.sequences_per_example if objective else 1)


def examples_per_step(params: TrainingParams, num_processes: int) -> int:
    """Examples one optimizer step trains on: the batch of every process, over its accumulation steps."""
    return params.per_device_train_batch_size * params.gradient_accumulation_steps * max(1, num_processes)


def tokens_to_train(params: TrainingParams, num_processes: int, dataset_rows: int | None,
                    per_example: float | None = None, examples_per_row: int = 1) -> int | None:
    """The tokens the run trains on: examples × `per_example` tokens, by default every example at max_length (an
    upper bound); None when the number of examples cannot be known (epochs of an unknown dataset). An epoch's
    examples are its train rows × `examples_per_row` (ObjectiveSpec.examples_per_row of the dataset's format: the
    eval split is drawn on rows)."""
    per_example = params.max_length if per_example is None else per_example
    per_step = examples_per_step(params, num_processes)
    if params.max_steps:
        return int(params.max_steps * per_step * per_example)
    if dataset_rows is None:
        return None
    train_rows = dataset_rows - (max(1, round(dataset_rows * params.eval_split)) if params.eval_split > 0 else 0)
    return int(max(0, train_rows) * examples_per_row * params.num_train_epochs * per_example)


# ---------------------------------------------------------------- what earlier runs measured

# The allocator's share is read from the few most recent runs of the model and method: each is estimated again.
ALLOCATOR_RUNS = 5


def allocator_factor(factors: Sequence[float]) -> float:
    """The allocator's share to apply: the median of the recent runs' (newest first, ALLOCATOR_RUNS at most); 1.0
    without any."""
    return statistics.median(factors[:ALLOCATOR_RUNS]) if factors else 1.0


@dataclass(frozen=True)
class StepCost:
    """What a training step of a model and method costs: a fixed part, whatever its tokens (the optimizer's update
    of every trained parameter: ~0.7 s for full fine-tuning of SmolLM2 on 2 CPU cores), and a part per token."""

    fixed_seconds: float
    seconds_per_token: float

    def seconds(self, steps: float, tokens: float) -> float:
        return steps * self.fixed_seconds + tokens * self.seconds_per_token


# Earlier runs tell the fixed part from the per-token one only when their tokens per step differ this much.
STEP_COST_SPREAD = 1.5


def fit_step_cost(steps: Sequence[tuple[float, float]], throughputs: Sequence[float]) -> StepCost | None:
    """The step cost from earlier runs: a least-squares line through their (tokens per step, seconds per step) when
    their tokens per step differ enough and the line is a cost (both parts ≥ 0); else the median throughput alone (a
    run of short rows trains fewer tokens per second than one of long rows: the fixed part weighs more). None
    without any earlier run."""
    points = [(tokens, seconds) for tokens, seconds in steps if tokens > 0 and seconds > 0]
    if len(points) >= 2:
        tokens = [t for t, _ in points]
        if max(tokens) >= STEP_COST_SPREAD * min(tokens):
            mean_t, mean_s = statistics.fmean(tokens), statistics.fmean(s for _, s in points)
            slope = (sum((t - mean_t) * (s - mean_s) for t, s in points)
                     / sum((t - mean_t) ** 2 for t in tokens))
            fixed = mean_s - slope * mean_t
            if slope > 0 and fixed >= 0:
                return StepCost(fixed_seconds=fixed, seconds_per_token=slope)
    rates = [rate for rate in throughputs if rate > 0]
    return StepCost(fixed_seconds=0.0, seconds_per_token=1 / statistics.median(rates)) if rates else None
