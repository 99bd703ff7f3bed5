"""LoRA: a trainable low-rank update B·A beside chosen frozen linear layers."""

import re
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import Field, field_validator, model_validator

from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, ObjectiveSpec, register_method

if TYPE_CHECKING:
    from peft import LoraConfig, PeftModel
    from torch.optim import Optimizer
    from transformers import Trainer


PLAIN_NAME = re.compile(r"[\w.]+")  # a module name, or a dotted path to one
# The tiny model learns its tasks at a learning rate far above a real model's, from the first step, without dropout.
TINY_LORA_DEFAULTS = {"learning_rate": 5e-3, "lora_dropout": 0.0, "warmup_ratio": 0.0}


class LoraParams(TrainingParams):
    learning_rate: float = Field(2e-4, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    r: int = Field(8, ge=1, le=1024, title="Rank (r)", description="Rank of the update matrices")
    lora_alpha: int = Field(
        16, ge=1, le=4096, title="LoRA alpha", description="Scale of the update: it is multiplied by lora_alpha / r"
    )
    lora_dropout: float = Field(0.05, ge=0, lt=1, title="LoRA dropout", description="Dropout on the adapter's input")
    target_modules: list[str] | str = Field(
        "all-linear",
        title="Target modules",
        description='Module names to adapt (e.g. ["q_proj", "v_proj"]), or "all-linear" for every linear layer '
        "except the output head",
    )
    use_rslora: bool = Field(
        False,
        title="rsLoRA scaling",
        description="Scale the update by lora_alpha / √r instead of lora_alpha / r (rank-stabilised LoRA): high "
        "ranks keep learning as fast as low ones",
    )
    init_lora_weights: Literal["default", "pissa"] = Field(
        "default",
        title="Initialisation",
        description="default: A random and B zero, so training starts from the base model. pissa: A and B from the "
        "principal singular vectors of each adapted weight, which are taken out of the base (PiSSA; often converges "
        "faster); the adapter is saved as a plain LoRA of twice the rank that applies to the unchanged base",
    )
    pissa_niter: int = Field(
        16,
        ge=0,
        le=64,
        title="PiSSA SVD iterations",
        description="Iterations of the fast randomised SVD that PiSSA starts from; 0 computes the exact SVD (slow on a "
        "large model). Only with init_lora_weights pissa",
    )
    loraplus_lr_ratio: float = Field(
        0.0,
        ge=0,
        le=100,
        title="LoRA+ learning-rate ratio",
        description="LoRA+: the B matrices learn at this multiple of the learning rate, the A matrices at the "
        "learning rate (the paper suggests 16); 0 trains both at the learning rate, as plain LoRA",
    )

    @field_validator("target_modules")
    @classmethod
    def _one_name_is_a_list_of_it_and_a_pattern_compiles(cls, value: list[str] | str) -> list[str] | str:
        return adaptable_layer_names(value)

    @model_validator(mode="after")
    def _lora_plus_ratio_and_pissa_fit(self) -> "LoraParams":
        if 0 < self.loraplus_lr_ratio < 1:
            raise ValueError("loraplus_lr_ratio is the B matrices' learning rate over the A matrices': 0 (off) or "
                             "at least 1")
        if self.init_lora_weights == "pissa" and self.zero_stage == 3:
            raise ValueError("PiSSA factorises each whole weight, which ZeRO-3 shards across processes: use "
                             "zero_stage 2 or less, or init_lora_weights default")
        return self


def adaptable_layer_names(value: list[str] | str) -> list[str] | str:
    """target_modules as PEFT should read them. PEFT reads a single string as a regular expression the layer's whole
    dotted name must match, so "q_proj" alone (what the launch form sends for one name) matches no layer and the run
    fails at load. As a list it matches every layer of that name, and still any a regex of name characters and dots
    would have matched."""
    if isinstance(value, str) and value != "all-linear":
        if PLAIN_NAME.fullmatch(value):
            return [value]
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"a single string is a regular expression over the layers' names, and this one is "
                             f"not valid: {exc}") from None
    return value


def lora_config(params: LoraParams, use_dora: bool = False) -> "LoraConfig":
    """The PEFT LoraConfig of LoRA and of the methods built on it (DoRA, QLoRA)."""
    from peft import LoraConfig, TaskType

    return LoraConfig(
        task_type=TaskType.CAUSAL_LM,
        r=params.r,
        lora_alpha=params.lora_alpha,
        lora_dropout=params.lora_dropout,
        target_modules=params.target_modules,
        use_dora=use_dora,
        use_rslora=params.use_rslora,
        # PEFT's type names "pissa_niter_[number of iters]" as one literal string.
        init_lora_weights=cast(Any, peft_initialisation(params)),
    )


def peft_initialisation(params: LoraParams) -> bool | str:
    """init_lora_weights as PEFT takes it: True (its default), "pissa" (exact SVD) or "pissa_niter_<n>"."""
    if params.init_lora_weights == "default":
        return True
    return f"pissa_niter_{params.pissa_niter}" if params.pissa_niter else "pissa"


def check_objective(params: LoraParams, objective: ObjectiveSpec) -> None:
    """PiSSA takes its start out of the base's weights: disabling the adapter, which gives an objective's reference
    model with PEFT, no longer gives the base; and PEFT's conversion to a plain LoRA keeps no score head."""
    if params.init_lora_weights != "pissa":
        return
    if objective.keeps_reference(params):
        raise ValueError(f"PiSSA changes the base weights, so the {objective.name} objective's reference (the base with "
                         "the adapter disabled) would not be the base: use init_lora_weights default")
    if objective.model_head != "causal_lm":
        raise ValueError(f"PiSSA is saved converted to a plain LoRA, which holds no score head: the {objective.name} "
                         "objective trains with init_lora_weights default")


def loraplus_optimizer(trainer: "Trainer", params: LoraParams) -> "Optimizer | None":
    """LoRA+ (PEFT's create_loraplus_optimizer): the trainer's own optimizer and settings, with the B matrices (and
    any other one-dimensional trained weight, as DoRA's magnitudes) at loraplus_lr_ratio × the learning rate; None
    without a ratio, to keep the trainer's."""
    if not params.loraplus_lr_ratio:
        return None
    from peft.optimizers import create_loraplus_optimizer

    model = cast("PeftModel", trainer.model)  # the trainer wrapped the base with the method's adapter
    optimizer_cls, optimizer_kwargs = trainer.get_optimizer_cls_and_kwargs(trainer.args)
    kwargs = dict(optimizer_kwargs)
    return create_loraplus_optimizer(model, optimizer_cls, lr=kwargs.pop("lr"),
                                     loraplus_lr_ratio=params.loraplus_lr_ratio,
                                     loraplus_weight_decay=trainer.args.weight_decay, **kwargs)


def build_peft_config(params: LoraParams, tokenizer_dir: str) -> "LoraConfig":
    return lora_config(params)


register_method(
    MethodSpec(
        name="lora",
        title="LoRA",
        description="Freezes the model and learns a low-rank update on its linear layers (~0.1–1 % of the weights).",
        params_model=LoraParams,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults=TINY_LORA_DEFAULTS,
        build_optimizer=loraplus_optimizer,
        check_objective=check_objective,
    )
)
