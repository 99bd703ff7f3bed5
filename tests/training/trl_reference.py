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
