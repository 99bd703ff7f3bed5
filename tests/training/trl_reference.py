"""What TRL itself makes of SFT records: the reference the truncation counts are checked against."""

from pathlib import Path


def trl_token_lengths(records: list[dict], model_dir: Path, tmp_dir: Path) -> list[int]:
    """Length of each record's token sequence as TRL's SFTTrainer builds it, with no max_length cut."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from tunelab.training.models import load_model_and_tokenizer

    _, tokenizer = load_model_and_tokenizer(str(model_dir))
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=SFTConfig(output_dir=str(tmp_dir), max_length=None, report_to="none", use_cpu=True,
                       assistant_only_loss="messages" in records[0]),
        train_dataset=Dataset.from_list(records),
        processing_class=tokenizer,
    )
    return [len(ids) for ids in trainer.train_dataset["input_ids"]]


def long_instruction_rows(count: int = 12) -> list[dict]:
    """Instruction rows, every other one with a long input."""
    return [{"instruction": "Reverse the order of these words.",
             "input": " ".join(["apple river stone"] * (20 if i % 2 else 1)), "output": "stone river apple"}
            for i in range(count)]


def trl_preference_lengths(records: list[dict], model_dir: Path, tmp_dir: Path) -> list[tuple[int, int]]:
    """(prompt + chosen, prompt + rejected) token lengths of each record as TRL's DPOTrainer builds them, uncut."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import DPOConfig, DPOTrainer

    from tunelab.training.models import load_model_and_tokenizer

    _, tokenizer = load_model_and_tokenizer(str(model_dir))
    trainer = DPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        ref_model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=DPOConfig(output_dir=str(tmp_dir), max_length=None, report_to="none", use_cpu=True),
        train_dataset=Dataset.from_list(records),
        processing_class=tokenizer,
    )
    return [(len(row["prompt_ids"]) + len(row["chosen_ids"]), len(row["prompt_ids"]) + len(row["rejected_ids"]))
            for row in trainer.train_dataset]


def long_preference_rows(count: int = 8) -> list[dict]:
    """Preference pairs, every other one with a long prompt; the rejected answers longer than the chosen."""
    return [{"prompt": " ".join(["Reverse apple river stone."] * (12 if i % 2 else 1)), "chosen": "stone river apple",
             "rejected": "apple river stone apple river stone"} for i in range(count)]
