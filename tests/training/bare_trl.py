"""The reference: the same SFT, continued-pretraining and DPO runs written as plain TRL scripts, without any Tunelab
engine code.

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
    """Per-step train losses of plain SFTTrainer on an instruction JSONL, for resolved params of "full" or "lora";
    the eval split is drawn with `split_seed` (the dataset's), else with the training seed."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
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
        )

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
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(train_records),
        eval_dataset=Dataset.from_list(eval_records) if eval_records else None,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
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
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    train_records, eval_records = _held_out([{"text": r["text"]} for r in _read_rows(dataset_path)], params)
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=SFTConfig(**_common_args(params, output_dir, bool(eval_records)), packing=True,
                       packing_strategy="wrapped", completion_only_loss=False),
        train_dataset=Dataset.from_list(train_records),
        eval_dataset=Dataset.from_list(eval_records) if eval_records else None,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def bare_trl_dpo_losses(model_dir, dataset_path, params: dict, output_dir) -> list[float]:
    """Per-step losses of plain DPOTrainer with LoRA on a preference JSONL (reference: the base, adapter disabled)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
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
        train_dataset=Dataset.from_list(train_records),
        eval_dataset=Dataset.from_list(eval_records) if eval_records else None,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=LoraConfig(task_type="CAUSAL_LM", r=params["r"], lora_alpha=params["lora_alpha"],
                               lora_dropout=params["lora_dropout"], target_modules=params["target_modules"]),
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def bare_trl_dpo_after_sft_losses(model_dir, sft_adapter_dir, sft_tokenizer_dir, dataset_path, params: dict,
                                  output_dir) -> list[float]:
    """Per-step losses of plain DPOTrainer with a new LoRA on the base with an SFT run's adapter merged in, as the
    usual SFT → DPO recipe does (the reference: that merged model, the new adapter disabled)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig, PeftModel
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
        train_dataset=Dataset.from_list(train_records),
        eval_dataset=Dataset.from_list(eval_records) if eval_records else None,
        processing_class=AutoTokenizer.from_pretrained(sft_tokenizer_dir),
        peft_config=LoraConfig(task_type="CAUSAL_LM", r=params["r"], lora_alpha=params["lora_alpha"],
                               lora_dropout=params["lora_dropout"], target_modules=params["target_modules"]),
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
