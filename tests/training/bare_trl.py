"""The reference: the same SFT, continued-pretraining and preference runs (DPO, SimPO, KTO, reward) written as plain
TRL scripts, without any Tunelab engine code.

Tunelab's engine must reproduce these per-step losses; the end-to-end worker test reuses them.
"""

import json
import math
import random
from pathlib import Path


def recorded_warmup_steps(params: dict) -> float | int:
    """The warmup as a run's record states it (config.json's resolved warmup_steps): the ratio's whole steps, rounded
    down, when max_steps is set; otherwise the ratio, as transformers takes it."""
    if params["max_steps"]:
        return math.floor(params["warmup_ratio"] * params["max_steps"])
    return params["warmup_ratio"]


def bare_trl_losses(model_dir, dataset_path, params: dict, output_dir, method: str = "full",
                    split_seed: int | None = None) -> list[float]:
    """Per-step train losses of plain SFTTrainer on an instruction JSONL, for resolved params of "full", "freeze" (the
    layers frozen by hand), "lora" (with rsLoRA, PiSSA, LoRA+ and NEFTune as PEFT's and TRL's docs set them up) or
    "oft"; the eval split is drawn with `split_seed` (the dataset's), else with the training seed."""
    import torch
    from peft import LoraConfig, OFTConfig, get_peft_model
    from peft.optimizers import create_loraplus_optimizer
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    rows = [json.loads(line) for line in Path(dataset_path).read_text(encoding="utf-8").splitlines() if line.strip()]
    records = []
    for row in rows:
        user_turn = row["instruction"] + ("\n\n" + row["input"] if row.get("input") else "")
        records.append(
            {
                "prompt": [{"role": "user", "content": user_turn}],
                "completion": [{"role": "assistant", "content": row["output"]}],
            }
        )

    train_records, eval_records = _held_out(records, params, split_seed)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    peft_config = None
    if method == "lora":
        peft_config = LoraConfig(
            task_type="CAUSAL_LM",
            r=params["r"],
            lora_alpha=params["lora_alpha"],
            lora_dropout=params["lora_dropout"],
            target_modules=params["target_modules"],
            use_rslora=params["use_rslora"],
            init_lora_weights=True if params["init_lora_weights"] == "default"
            else f"pissa_niter_{params['pissa_niter']}" if params["pissa_niter"] else "pissa",
        )
    elif method == "oft":
        peft_config = OFTConfig(task_type="CAUSAL_LM", r=0, oft_block_size=params["oft_block_size"],
                                module_dropout=params["module_dropout"], target_modules=params["target_modules"],
                                coft=params["coft"], eps=params["eps"])
    elif method == "freeze":
        # LLaMA-Factory's freeze tuning by hand: the last layers train, the embeddings and the head if asked.
        model.requires_grad_(False)
        for layer in model.model.layers[-params["trainable_layers"]:]:
            layer.requires_grad_(True)
        model.model.embed_tokens.requires_grad_(params["train_embeddings"])
        model.lm_head.requires_grad_(params["train_head"])
    optimizers = (None, None)
    if params.get("loraplus_lr_ratio"):
        # LoRA+ as PEFT's docs set it up: the adapter made first (after the seed, as SFTTrainer makes it), and its
        # optimizer handed to the trainer: AdamW, fused as TRL's default optim is.
        set_seed(params["seed"])
        model, peft_config = get_peft_model(model, peft_config), None
        optimizers = (create_loraplus_optimizer(model, torch.optim.AdamW, lr=params["learning_rate"],
                                                loraplus_lr_ratio=params["loraplus_lr_ratio"],
                                                loraplus_weight_decay=params["weight_decay"], betas=(0.9, 0.999),
                                                eps=1e-8, fused=True), None)

    args = SFTConfig(
        output_dir=str(output_dir),
        max_steps=params["max_steps"] or -1,
        num_train_epochs=params["num_train_epochs"],
        learning_rate=params["learning_rate"],
        lr_scheduler_type=params["lr_scheduler_type"],
        warmup_steps=recorded_warmup_steps(params),
        per_device_train_batch_size=params["per_device_train_batch_size"],
        per_device_eval_batch_size=params["per_device_train_batch_size"],
        gradient_accumulation_steps=params["gradient_accumulation_steps"],
        max_length=params["max_length"],
        weight_decay=params["weight_decay"],
        eval_strategy="steps" if eval_records else "no",
        eval_steps=params["eval_steps"],
        eval_on_start=bool(eval_records),
        logging_steps=params["logging_steps"],
        seed=params["seed"],
        bf16=False,
        activation_checkpointing=params["gradient_checkpointing"],
        use_cpu=not torch.cuda.is_available(),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        neftune_noise_alpha=params["neftune_noise_alpha"] or None,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        **_splits(train_records, eval_records),
        processing_class=tokenizer,
        peft_config=peft_config,
        optimizers=optimizers,
    )
    return _trained_losses(trainer)


def _splits(train_records: list[dict], eval_records: list[dict]) -> dict:
    from datasets import Dataset

    return {"train_dataset": Dataset.from_list(train_records),
            "eval_dataset": Dataset.from_list(eval_records) if eval_records else None}


def _lora(params: dict, task_type: str = "CAUSAL_LM"):
    from peft import LoraConfig

    return LoraConfig(task_type=task_type, r=params["r"], lora_alpha=params["lora_alpha"],
                      lora_dropout=params["lora_dropout"], target_modules=params["target_modules"])


def _trained_losses(trainer) -> list[float]:
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def _read_rows(dataset_path) -> list[dict]:
    return [json.loads(line) for line in Path(dataset_path).read_text(encoding="utf-8").splitlines() if line.strip()]


def _held_out(records: list[dict], params: dict, split_seed: int | None = None) -> tuple[list[dict], list[dict]]:
    eval_count = min(len(records) - 1, max(1, round(len(records) * params["eval_split"]))) if params["eval_split"] else 0
    seed = params["seed"] if split_seed is None else split_seed
    eval_indices = set(random.Random(seed).sample(range(len(records)), eval_count))
    return ([r for i, r in enumerate(records) if i not in eval_indices],
            [r for i, r in enumerate(records) if i in eval_indices])


def _common_args(params: dict, output_dir, has_eval: bool) -> dict:
    import torch

    return dict(
        output_dir=str(output_dir), max_steps=params["max_steps"] or -1, num_train_epochs=params["num_train_epochs"],
        learning_rate=params["learning_rate"], lr_scheduler_type=params["lr_scheduler_type"],
        warmup_steps=recorded_warmup_steps(params), per_device_train_batch_size=params["per_device_train_batch_size"],
        per_device_eval_batch_size=params["per_device_train_batch_size"],
        gradient_accumulation_steps=params["gradient_accumulation_steps"], max_length=params["max_length"],
        weight_decay=params["weight_decay"], eval_strategy="steps" if has_eval else "no",
        eval_steps=params["eval_steps"], eval_on_start=has_eval, logging_steps=params["logging_steps"],
        seed=params["seed"], bf16=False, activation_checkpointing=params["gradient_checkpointing"],
        use_cpu=not torch.cuda.is_available(), save_strategy="no", report_to="none", disable_tqdm=True,
    )


def bare_trl_pretrain_losses(model_dir, dataset_path, params: dict, output_dir) -> list[float]:
    """Per-step losses of plain SFTTrainer continued pretraining (full weights) on a text JSONL, packed "wrapped"."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    train_records, eval_records = _held_out([{"text": r["text"]} for r in _read_rows(dataset_path)], params)
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=SFTConfig(**_common_args(params, output_dir, bool(eval_records)), packing=True,
                       packing_strategy="wrapped", completion_only_loss=False),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )
    return _trained_losses(trainer)


def bare_trl_dpo_losses(model_dir, dataset_path, params: dict, output_dir) -> list[float]:
    """Per-step losses of plain DPOTrainer with LoRA on a preference JSONL (reference: the base, adapter disabled)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    records = [
        {"prompt": [{"role": "user", "content": r["prompt"]}], "chosen": [{"role": "assistant", "content": r["chosen"]}],
         "rejected": [{"role": "assistant", "content": r["rejected"]}]}
        for r in _read_rows(dataset_path)
    ]
    train_records, eval_records = _held_out(records, params)
    trainer = DPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=DPOConfig(**_common_args(params, output_dir, bool(eval_records)), beta=params["beta"],
                       loss_type=[params["loss_type"]]),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=_lora(params),
    )
    return _trained_losses(trainer)


def bare_trl_dpo_after_sft_losses(model_dir, sft_adapter_dir, sft_tokenizer_dir, dataset_path, params: dict,
                                  output_dir) -> list[float]:
    """Per-step losses of plain DPOTrainer with a new LoRA on the base with an SFT run's adapter merged in, as the
    usual SFT → DPO recipe does (the reference: that merged model, the new adapter disabled)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    records = [
        {"prompt": [{"role": "user", "content": r["prompt"]}], "chosen": [{"role": "assistant", "content": r["chosen"]}],
         "rejected": [{"role": "assistant", "content": r["rejected"]}]}
        for r in _read_rows(dataset_path)
    ]
    train_records, eval_records = _held_out(records, params)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    sft_model = PeftModel.from_pretrained(base, sft_adapter_dir).merge_and_unload()
    trainer = DPOTrainer(
        model=sft_model,
        args=DPOConfig(**_common_args(params, output_dir, bool(eval_records)), beta=params["beta"],
                       loss_type=[params["loss_type"]]),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(sft_tokenizer_dir),
        peft_config=_lora(params),
    )
    return _trained_losses(trainer)


def bare_trl_reward_losses(model_dir, dataset_path, params: dict, output_dir, method: str = "full") -> list[float]:
    """Per-step losses of plain RewardTrainer on a preference JSONL: the base as a one-output sequence classifier
    (its new score head drawn from the seed, set before loading as TRL does), full or with a SEQ_CLS LoRA."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
    from trl import RewardConfig, RewardTrainer

    records = [
        {"prompt": [{"role": "user", "content": r["prompt"]}], "chosen": [{"role": "assistant", "content": r["chosen"]}],
         "rejected": [{"role": "assistant", "content": r["rejected"]}]}
        for r in _read_rows(dataset_path)
    ]
    train_records, eval_records = _held_out(records, params)
    set_seed(params["seed"])
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32, num_labels=1)
    peft_config = None
    if method == "lora":
        peft_config = LoraConfig(task_type="SEQ_CLS", r=params["r"], lora_alpha=params["lora_alpha"],
                                 lora_dropout=params["lora_dropout"], target_modules=params["target_modules"])
    trainer = RewardTrainer(
        model=model,
        args=RewardConfig(**_common_args(params, output_dir, bool(eval_records)),
                          center_rewards_coefficient=params["center_rewards_coefficient"] or None),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=peft_config,
    )
    return _trained_losses(trainer)


def bare_trl_simpo_losses(model_dir, dataset_path, params: dict, output_dir) -> list[float]:
    """Per-step losses of plain CPOTrainer (trl.experimental) with loss_type "simpo" and LoRA on a preference JSONL:
    no reference model."""
    import os

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl.experimental.cpo import CPOConfig, CPOTrainer

    records = [
        {"prompt": [{"role": "user", "content": r["prompt"]}], "chosen": [{"role": "assistant", "content": r["chosen"]}],
         "rejected": [{"role": "assistant", "content": r["rejected"]}]}
        for r in _read_rows(dataset_path)
    ]
    train_records, eval_records = _held_out(records, params)
    trainer = CPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=CPOConfig(**_common_args(params, output_dir, bool(eval_records)), loss_type="simpo", beta=params["beta"],
                       simpo_gamma=params["simpo_gamma"], cpo_alpha=params["cpo_alpha"]),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=_lora(params),
    )
    return _trained_losses(trainer)


def bare_trl_kto_losses(model_dir, dataset_path, params: dict, output_dir, method: str = "full") -> list[float]:
    """Per-step losses of plain KTOTrainer on a feedback JSONL (prompt, completion, label), in file order: full (TRL
    loads the reference from the model's folder) or with LoRA (the reference: the base, adapter disabled)."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import KTOConfig, KTOTrainer

    records = [
        {"prompt": [{"role": "user", "content": r["prompt"]}],
         "completion": [{"role": "assistant", "content": r["completion"]}], "label": r["label"]}
        for r in _read_rows(dataset_path)
    ]
    train_records, eval_records = _held_out(records, params)
    peft_config = None
    if method == "lora":
        peft_config = LoraConfig(task_type="CAUSAL_LM", r=params["r"], lora_alpha=params["lora_alpha"],
                                 lora_dropout=params["lora_dropout"], target_modules=params["target_modules"])
    trainer = KTOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=KTOConfig(**_common_args(params, output_dir, bool(eval_records)), beta=params["beta"],
                       desirable_weight=params["desirable_weight"], undesirable_weight=params["undesirable_weight"]),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=peft_config,
    )
    return _trained_losses(trainer)


def bare_trl_online_rl_losses(trainer_name: str, model_dir, dataset_path, params: dict, output_dir,
                              reward_model_dir, reward_tokenizer_dir) -> tuple[list[float], list[float]]:
    """Per-step (losses, mean rewards) of plain GRPOTrainer or RLOOTrainer with a LoRA policy on an instruction JSONL's
    prompts, rewarded by a saved reward model (a full sequence classifier) and a length penalty."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

    config_class, trainer_class = {"grpo": (GRPOConfig, GRPOTrainer), "rloo": (RLOOConfig, RLOOTrainer)}[trainer_name]
    records = [{"prompt": [{"role": "user", "content": r["instruction"] + ("\n\n" + r["input"] if r.get("input") else "")}],
                "answer": r["output"]} for r in _read_rows(dataset_path)]
    train_records, eval_records = _held_out(records, params)
    target = params["reward_length_target"]

    def length(completions, completion_ids, **_):
        return [-abs(len(ids) - target) / target for ids in completion_ids]

    scorer = AutoModelForSequenceClassification.from_pretrained(reward_model_dir, num_labels=1).eval()
    scorer.requires_grad_(False)
    scorer.config._name_or_path = "reward_model"
    arguments = {k: v for k, v in _common_args(params, output_dir, bool(eval_records)).items() if k != "max_length"}
    trainer = trainer_class(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        reward_funcs=[length, scorer],
        args=config_class(**arguments, num_generations=params["num_generations"],
                          max_completion_length=params["max_completion_length"], temperature=params["temperature"],
                          epsilon=params["epsilon"], beta=params["beta"],
                          reward_weights=[params["reward_length"], params["reward_model"]]),
        **_splits(train_records, eval_records),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        reward_processing_classes=[None, AutoTokenizer.from_pretrained(reward_tokenizer_dir)],
        peft_config=_lora(params),
    )
    trainer.train()
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    return [entry["loss"] for entry in history], [entry["reward"] for entry in history]
