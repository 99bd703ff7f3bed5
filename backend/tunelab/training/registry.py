"""The only list of training methods and objectives. Light to import: the API reads it to publish JSON Schemas,
so nothing here (or in the method/objective modules at import time) touches torch, transformers, peft or trl.

A run's params are one flat object: the fields every method shares (TrainingParams), the method's own (rank, virtual
tokens…) and the objective's own (DPO's beta, SFT's packing). `params_model(objective, method)` is that model."""

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from tunelab.training.params import TrainingParams

if TYPE_CHECKING:
    from peft import PeftConfig
    from torch.optim import Optimizer
    from transformers import PreTrainedTokenizerBase, Trainer, TrainerCallback

    from tunelab.training.truncation import RowLengths

# A JSON object: a row of a dataset file, or a record a trainer takes.
Record = dict[str, Any]
Quantization = Literal["nf4"]
# What a run's model computes: next-token logits (it generates), or one score per sequence (a reward model).
ModelHead = Literal["causal_lm", "sequence_classification"]


class ObjectiveParams(BaseModel):
    """Base of an objective's own parameters; they sit beside the method's in a run's params."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ModelLoading:
    """How the base model's weights are loaded for a run."""

    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    quantization: Quantization | None = None  # nf4: bitsandbytes 4-bit NormalFloat with double quantization


@dataclass(frozen=True)
class TrainerInputs:
    """What an objective's build_trainer receives from the engine."""

    model: Any  # the loaded base model (a transformers PreTrainedModel)
    tokenizer: "PreTrainedTokenizerBase"
    params: Any  # the run's validated params, an instance of params_model(objective, method)
    train_records: list[Record]
    eval_records: list[Record]
    peft_config: "PeftConfig | None"
    dataset_format: str
    checkpoints_dir: Path
    resuming: bool  # continuing from a checkpoint: no second step-0 eval
    callbacks: "list[TrainerCallback]"
    # Loads another copy of the base model, frozen, as load_model did: the reference of a preference objective when
    # the method trains the weights themselves (with PEFT the reference is the base with the adapter disabled).
    load_base_model: Callable[[], Any]
    # Loads the reward model the run names (a reward run's, frozen, for scoring), with its tokenizer; None when the
    # run names none.
    load_reward_model: "Callable[[], tuple[Any, PreTrainedTokenizerBase]] | None" = None
    # The run's output folder, where an objective writes files of its own (rank 0); None: it writes none.
    output_dir: Path | None = None


def default_model_loading(method: "MethodSpec", params: TrainingParams) -> ModelLoading:
    """Frozen base weights in the run's precision for PEFT methods (a 7B LoRA in bf16 holds 14 GB of weights, not 28);
    full fine-tuning keeps fp32 master weights and runs bf16/fp16 under autocast."""
    if not method.peft or params.precision == "fp32":
        return ModelLoading()
    return ModelLoading(dtype="bfloat16" if params.precision == "bf16" else "float16")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    title: str
    description: str
    params_model: type[TrainingParams]
    peft: bool
    # (validated params, an instance of params_model; saved tokenizer dir) -> the PEFT config; None for methods that
    # train the weights directly.
    build_peft_config: "Callable[[Any, str], PeftConfig] | None" = None
    # How the base model is loaded; a method such as QLoRA quantizes it.
    model_loading: Callable[["MethodSpec", Any], ModelLoading] = default_model_loading
    # Needs a CUDA device (bitsandbytes quantization): refused at launch on the cpu queue.
    requires_cuda: bool = False
    # The objectives it trains with; None: every registered one.
    objectives: tuple[str, ...] | None = None
    # Its adapter is a change of the base's weights that folds into them (LoRA, IA3): a merged model can be exported
    # and a run can start from it. Prompt-learning adapters add virtual tokens instead; full fine-tuning has no adapter.
    mergeable: bool = False
    # The bundled tiny model's demo values for it: the tiny model is random and learns its tasks in 60 steps only at
    # learning rates far above a real model's, from the first step. Every method declares them (a test checks).
    tiny_model_defaults: Mapping[str, Any] = field(default_factory=dict)
    # (loaded model, validated params) -> None: changes the model in place before the trainer is built (freeze tuning
    # freezes all but the layers it trains). The estimator applies it to the model on the meta device too.
    prepare_model: Callable[[Any, Any], None] | None = None
    # (built trainer, validated params) -> the optimizer to train with in place of the trainer's own, or None to keep
    # the trainer's (LoRA+ gives the B matrices a higher learning rate).
    build_optimizer: "Callable[[Trainer, Any], Optimizer | None] | None" = None
    # (validated params, objective) -> None, or a ValueError saying why the objective cannot train with these params
    # (PiSSA changes the base, so the base is not the adapter disabled): checked wherever the run's params are.
    check_objective: "Callable[[Any, ObjectiveSpec], None] | None" = None
    # Prepends virtual tokens to the input, so the model's logits are longer than its tokens (prompt tuning, P-tuning;
    # prefix tuning adds them to the attention instead): it trains only objectives whose trainer lines them up.
    prepends_virtual_tokens: bool = False

    def supports(self, objective: str) -> bool:
        spec = _objectives.get(objective)
        if self.prepends_virtual_tokens and spec is not None and not spec.aligns_virtual_tokens:
            return False
        return self.objectives is None or objective in self.objectives


@dataclass(frozen=True)
class ObjectiveSpec:
    name: str
    title: str
    description: str
    dataset_formats: tuple[str, ...]
    params_model: type[ObjectiveParams]
    # Turns JSONL rows of one dataset format into the records the objective's trainer takes.
    convert_rows: Callable[[list[Record], str], list[Record]]
    # Builds the objective's TRL trainer and its config (SFTTrainer + SFTConfig, DPOTrainer + DPOConfig …).
    build_trainer: "Callable[[TrainerInputs], Trainer]"
    # Trainer log keys this objective adds to loss/learning_rate/grad_norm/epoch; recorded as train/<key> (and
    # eval/<key> for the eval_<key> of an evaluation).
    metric_keys: tuple[str, ...] = ()
    # Whether exp(loss) means something (a next-token loss); DPO's loss is not one.
    reports_perplexity: bool = True
    # Sequences one example puts through the model in a step (DPO: the chosen and the rejected answer): the estimate's
    # activations scale with it.
    sequences_per_example: int = 1
    # Whether a method that trains the weights themselves keeps a frozen copy of the base as the reference (with PEFT
    # the reference is the base with the adapter disabled), with the objective's default params: the estimate counts
    # its weights.
    keeps_reference_model: bool = False
    # (validated params) -> whether a run with these params keeps that reference, for an objective where it depends on
    # them (TRL's online RL trainers load one only for a KL term, beta > 0); None: keeps_reference_model, whatever the
    # params. `keeps_reference` asks it.
    reference_model_when: Callable[[Any], bool] | None = None
    # The objective's learning rate relative to SFT's for the same method (DPO trains 40× gentler: full 2e-5 → 5e-7,
    # LoRA 2e-4 → 5e-6).
    learning_rate_scale: float = 1.0
    # Extra field defaults for the objective, whatever the method (e.g. beta); applied before the user's params.
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # (records, tokenizer) -> the token length of each record as the trainer builds it before cutting at max_length
    # (of each sequence it cuts, for a preference pair), for counting what it cuts (training.truncation); None for an
    # objective that cuts nothing (packing into blocks).
    sequence_lengths: "Callable[[Iterable[Record], PreTrainedTokenizerBase], Iterable[RowLengths]] | None" = None
    # Rows are packed into full max_length blocks (continued pretraining): the estimate counts every sequence at
    # max_length, however short the rows.
    packs_rows: bool = False
    # What the run's eval/loss is, as the run's config artifact records it.
    eval_loss: str = "mean of the per-example loss over the eval split"
    # The objective usually trained next on this one's weights (SFT after continued pretraining, DPO after SFT): what
    # a run started from a run of this objective defaults to. A registered objective's name, or None.
    next_stage: str | None = None
    # The model the objective trains: a causal LM (it generates: samples, generation eval, the playground) or a
    # sequence classifier with one output, the score of a whole sequence (a reward model). PEFT adapters take the
    # matching task type, so a LoRA reward model trains its score head beside the adapter.
    model_head: ModelHead = "causal_lm"
    # The param that names a reward run whose model scores the run's completions (online RL): the launch checks that
    # run (this project's, a succeeded reward model) and the worker loads its weights; None: no such param.
    reward_run_param: str | None = None
    # The param bounding the completions the objective samples itself and trains on (online RL's
    # max_completion_length): each sequence it trains on is a prompt, which its trainer does not cut at max_length,
    # followed by up to that many tokens, and sampling keeps their keys and values (the estimate counts both); None: it
    # samples nothing.
    completion_length_param: str | None = None
    # The param naming how many completions it samples of each prompt (online RL's num_generations): an epoch trains
    # on that many examples of each row, and the estimate's training tokens count them.
    completions_per_prompt_param: str | None = None
    # Examples its trainer makes of one dataset row, by dataset format, where that is not one (KTO takes a preference
    # pair apart into a desirable and an undesirable answer: two examples of one sequence each): the estimate's
    # training tokens of an epoch count them.
    examples_per_row: Mapping[str, int] = field(default_factory=dict)
    # Its trainer lines its labels up with logits that prompt tuning or P-tuning lengthened by their virtual tokens
    # (TRL's SFT, DPO and KTO trainers do; the experimental CPO and ORPO trainers fail on the shapes): those methods
    # do not train an objective that does not (MethodSpec.prepends_virtual_tokens).
    aligns_virtual_tokens: bool = True

    @property
    def generates(self) -> bool:
        return self.model_head == "causal_lm"

    def examples_of_row(self, dataset_format: str, params: Any) -> int:
        """Examples its trainer makes of one row of `dataset_format` with `params`: the pairs taken apart (KTO), each
        prompt's completions (online RL)."""
        completions = int(getattr(params, self.completions_per_prompt_param)) if self.completions_per_prompt_param else 1
        return self.examples_per_row.get(dataset_format, 1) * completions

    def keeps_reference(self, params: Any) -> bool:
        """Whether a run with `params` (validated) keeps a frozen reference when its method has no adapter to disable."""
        return self.keeps_reference_model if self.reference_model_when is None else self.reference_model_when(params)

    @property
    def peft_task_type(self) -> str:
        return peft_task_type(self.model_head)


def peft_task_type(head: ModelHead) -> str:
    """The PEFT task type of an adapter on a model with `head` (a SEQ_CLS adapter trains and saves the score head)."""
    return "CAUSAL_LM" if head == "causal_lm" else "SEQ_CLS"


_methods: dict[str, MethodSpec] = {}
_objectives: dict[str, ObjectiveSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add a method; called once by its module at import."""
    if spec.name in _methods:
        raise ValueError(f"method {spec.name!r} is already registered")
    if spec.peft != (spec.build_peft_config is not None):
        raise ValueError(f"method {spec.name!r}: a PEFT method needs build_peft_config, and only it")
    if spec.mergeable and not spec.peft:
        raise ValueError(f"method {spec.name!r}: only a PEFT method has an adapter to merge")
    _methods[spec.name] = spec
    return spec


def register_objective(spec: ObjectiveSpec) -> ObjectiveSpec:
    """Add an objective; called once by its module at import."""
    if spec.name in _objectives:
        raise ValueError(f"objective {spec.name!r} is already registered")
    _objectives[spec.name] = spec
    return spec


def list_methods() -> list[MethodSpec]:
    return list(_methods.values())


def get_method(name: str) -> MethodSpec:
    """The method called `name`; KeyError if none is."""
    try:
        return _methods[name]
    except KeyError:
        raise KeyError(f"unknown training method {name!r}; known: {', '.join(_methods)}") from None


def list_objectives() -> list[ObjectiveSpec]:
    return list(_objectives.values())


def get_objective(name: str) -> ObjectiveSpec:
    """The objective called `name`; KeyError if none is."""
    try:
        return _objectives[name]
    except KeyError:
        raise KeyError(f"unknown training objective {name!r}; known: {', '.join(_objectives)}") from None


def methods_for(objective: str) -> list[MethodSpec]:
    return [m for m in _methods.values() if m.supports(objective)]


@cache
def params_model(objective: str, method: str) -> type[TrainingParams]:
    """The params of a run of `method` with `objective`: the method's fields, the objective's, and the objective's
    defaults (its learning-rate scale included) in place of the method's."""
    method_spec, objective_spec = get_method(method), get_objective(objective)
    base = method_spec.params_model
    overrides: dict[str, Any] = {}
    for name, default in _objective_defaults(objective_spec, base).items():
        info = base.model_fields.get(name) or objective_spec.params_model.model_fields[name]
        # A copy of the field with the new default keeps its bounds, title and description.
        changed = copy.copy(info)
        changed.default = default
        overrides[name] = (info.annotation, changed)
    bases: tuple[type[BaseModel], ...] = (base, objective_spec.params_model)
    validators: dict[str, Any] = {}
    check_objective = method_spec.check_objective
    if check_objective is not None:
        def fits_the_objective(params: TrainingParams) -> TrainingParams:
            check_objective(params, objective_spec)
            return params

        validators["_fits_the_objective"] = model_validator(mode="after")(fits_the_objective)
    combined = create_model(f"{objective_spec.name.title()}{base.__name__}", __base__=bases,
                            __module__=base.__module__, __validators__=validators, **overrides)
    return cast(type[TrainingParams], combined)  # its first base is the method's TrainingParams


def _objective_defaults(objective: ObjectiveSpec, base: type[TrainingParams]) -> dict[str, Any]:
    defaults = dict(objective.defaults)
    if objective.learning_rate_scale != 1.0 and "learning_rate" not in defaults:
        defaults["learning_rate"] = scaled_learning_rate(objective, base.model_fields["learning_rate"].default)
    return defaults


def scaled_learning_rate(objective: ObjectiveSpec, sft_learning_rate: float) -> float:
    """A method's SFT learning rate as this objective uses it (rounded to 3 significant digits)."""
    return float(f"{sft_learning_rate * objective.learning_rate_scale:.3g}")


def model_defaults_for(objective: ObjectiveSpec, model_defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A model's own defaults for a method, which are given for SFT, as `objective` takes them: its learning rate
    scaled like the method's."""
    defaults = dict(model_defaults)
    if "learning_rate" in defaults:
        defaults["learning_rate"] = scaled_learning_rate(objective, float(defaults["learning_rate"]))
    return defaults


def resolve_params(method: str, params: dict[str, Any], objective: str = "sft") -> dict[str, Any]:
    """Validate `params` against the run's params model and return them with every default filled in."""
    return params_model(objective, method).model_validate(params).model_dump(mode="json")


# Importing the packages runs every module's register_* call, so the lists above are complete once this module is.
from tunelab.training import methods as _methods_package  # noqa: E402, F401
from tunelab.training import objectives as _objectives_package  # noqa: E402, F401
