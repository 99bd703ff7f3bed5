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


def trl_cpo_lengths(records: list[dict], model_dir: Path, tmp_dir: Path, tokenizer=None) -> list[tuple[int, int]]:
    """(prompt + chosen, prompt + rejected) token lengths of each record as TRL's CPOTrainer (SimPO) builds them,
    uncut; with the model's tokenizer unless another is given."""
    import os

    from datasets import Dataset
    from transformers import AutoModelForCausalLM

    from tunelab.training.models import load_model_and_tokenizer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl.experimental.cpo import CPOConfig, CPOTrainer

    tokenizer = tokenizer or load_model_and_tokenizer(str(model_dir))[1]
    trainer = CPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=CPOConfig(output_dir=str(tmp_dir), max_length=100_000, report_to="none", use_cpu=True),
        train_dataset=Dataset.from_list(records),
        processing_class=tokenizer,
    )
    return [(len(row["chosen_input_ids"]), len(row["rejected_input_ids"])) for row in trainer.train_dataset]


def trl_kto_lengths(records: list[dict], model_dir: Path, tmp_dir: Path) -> list[int]:
    """Token length of prompt + completion of each rated answer as TRL's KTOTrainer builds it, uncut."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import KTOConfig, KTOTrainer

    from tunelab.training.models import load_model_and_tokenizer

    _, tokenizer = load_model_and_tokenizer(str(model_dir))
    trainer = KTOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        ref_model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=KTOConfig(output_dir=str(tmp_dir), max_length=None, report_to="none", use_cpu=True,
                       per_device_train_batch_size=2),
        train_dataset=Dataset.from_list(records),
        processing_class=tokenizer,
    )
    return [len(row["prompt_ids"]) + len(row["completion_ids"]) for row in trainer.train_dataset]
