"""Generate the bundled tiny model and sample dataset, reproducibly and offline.

Usage: python -m tunelab.assets.build MODELS_DIR SAMPLES_DIR
"""

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tunelab.training import registry

TINY_MODEL_NAME = "tunelab-tiny"
SAMPLE_DATASET_FILE = "tiny-tasks.jsonl"
PREFERENCE_DATASET_FILE = "tiny-preferences.jsonl"
FEEDBACK_DATASET_FILE = "tiny-feedback.jsonl"
TEXT_DATASET_FILE = "tiny-notes.jsonl"
CAPITALS_DATASET_FILE = "capital-questions.jsonl"
ASSET_SEED = 1234

# The assistant turn sits inside {% generation %} so TRL's assistant_only_loss can find it; the eos token is inside
# too, so the model learns to stop. A prompt rendered with add_generation_prompt is a prefix of the full chat.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "<|assistant|>\n{% generation %}{{ message['content'] }}{{ eos_token }}{% endgeneration %}"
    "{% else %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]

WORDS = (
    "apple river stone cloud green tiger paper music light water bread chair table window garden winter "
    "summer orange silver planet rocket forest castle dragon pencil yellow purple market bridge candle "
    "mirror garlic lemon spider butter carpet dinner farmer hammer island jacket kitten ladder monkey "
    "needle ocean pepper rabbit salad tomato violin wallet zebra anchor basket coffee"
).split()

# Countries whose capitals have one common English spelling.
CAPITALS = (
    ("France", "Paris"), ("Italy", "Rome"), ("Japan", "Tokyo"), ("Spain", "Madrid"), ("Germany", "Berlin"),
    ("the United Kingdom", "London"), ("Russia", "Moscow"), ("China", "Beijing"), ("Egypt", "Cairo"),
    ("Greece", "Athens"), ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Ireland", "Dublin"), ("Norway", "Oslo"),
    ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Denmark", "Copenhagen"), ("Poland", "Warsaw"),
    ("Hungary", "Budapest"), ("Belgium", "Brussels"), ("the Netherlands", "Amsterdam"), ("Canada", "Ottawa"),
    ("Mexico", "Mexico City"), ("Peru", "Lima"), ("Argentina", "Buenos Aires"), ("Chile", "Santiago"),
    ("Cuba", "Havana"), ("Kenya", "Nairobi"), ("Thailand", "Bangkok"), ("South Korea", "Seoul"),
    ("India", "New Delhi"), ("Iran", "Tehran"), ("Iraq", "Baghdad"), ("Turkey", "Ankara"), ("Australia", "Canberra"),
    ("Czechia", "Prague"), ("the Philippines", "Manila"), ("Indonesia", "Jakarta"), ("Vietnam", "Hanoi"),
    ("Venezuela", "Caracas"), ("Romania", "Bucharest"), ("Iceland", "Reykjavik"), ("Switzerland", "Bern"),
    ("Morocco", "Rabat"), ("Nigeria", "Abuja"), ("Ethiopia", "Addis Ababa"), ("Saudi Arabia", "Riyadh"),
    ("Syria", "Damascus"), ("Lebanon", "Beirut"),
)


@dataclass(frozen=True)
class AssetDescriptor:
    name: str
    path: str  # relative to the models or samples directory
    description: str
    title: str = ""
    format: str = "instruction"  # datasets only: a DatasetFormat value
    make_target: str | None = None  # models only: the make target that fetches it, when it is not built here
    # Models only: {method name: {param: value}} applied over the method's own defaults when a run uses this model
    # (the launch form shows them; the API fills them in for params a launch leaves out).
    param_defaults: dict[str, dict[str, object]] = field(default_factory=dict)


# What each method declares for the tiny model (MethodSpec.tiny_model_defaults): learning rates far above a real
# model's, no warmup, no dropout.
TINY_PARAM_DEFAULTS: dict[str, dict[str, object]] = {
    method.name: dict(method.tiny_model_defaults) for method in registry.list_methods()
}


BUNDLED_MODELS = [
    AssetDescriptor(
        name=TINY_MODEL_NAME,
        path=TINY_MODEL_NAME,
        title="Tunelab tiny Llama (bundled)",
        description="Randomly initialised 4-layer Llama (~0.26M parameters) with a tokenizer trained on the sample "
        "dataset; trains in seconds on a CPU. For demos and tests.",
        param_defaults=TINY_PARAM_DEFAULTS,
    ),
    AssetDescriptor(
        name="smollm2-135m-instruct",
        path="smollm2-135m-instruct",
        title="SmolLM2-135M-Instruct",
        make_target="models",
        description="SmolLM2-135M-Instruct (GGUF, dequantized at load); present after `make models`.",
    ),
]

SAMPLE_DATASETS = [
    AssetDescriptor(
        name="tiny-tasks",
        path=SAMPLE_DATASET_FILE,
        title="Tiny tasks (sample)",
        description="600 instruction rows of small word and number tasks (uppercase, reverse word order, add, "
        "count letters); the tiny model learns them visibly in a minute.",
    ),
    AssetDescriptor(
        name="tiny-preferences",
        path=PREFERENCE_DATASET_FILE,
        title="Tiny task preferences (sample)",
        format="preference",
        description="300 preference pairs on the tiny tasks: the right answer chosen, a near miss (off by one, "
        "words left in order, not capitalised) rejected. DPO raises the reward margin on it within a few steps.",
    ),
    AssetDescriptor(
        name="tiny-feedback",
        path=FEEDBACK_DATASET_FILE,
        title="Tiny task feedback (sample)",
        format="feedback",
        description="600 answers to the tiny tasks rated one by one, for KTO: the 300 preference pairs taken apart, "
        "each right answer rated desirable and each near miss undesirable, in a shuffled order.",
    ),
    AssetDescriptor(
        name="tiny-notes",
        path=TEXT_DATASET_FILE,
        title="Tiny task notes (sample text)",
        format="text",
        description="200 short plain-text notes about the tiny tasks' words and numbers, for continued pretraining.",
    ),
    AssetDescriptor(
        name="capital-questions",
        path=CAPITALS_DATASET_FILE,
        title="Capital questions (sample prompts)",
        format="prompt",
        description=f"{len(CAPITALS)} prompts asking for a country's capital, each with the one-sentence answer "
        "SmolLM2-135M-Instruct gives when it is right (\"The capital of France is Paris.\"), for GRPO or RLOO with "
        "the exact-match reward: the model answers some exactly, so a group's answers earn different rewards.",
    ),
]


def _task_row(rng: random.Random) -> dict:
    """One instruction example of a randomly chosen small task."""
    task = rng.randrange(4)
    if task == 0:
        word = rng.choice(WORDS)
        return {"instruction": "Write this word in capital letters.", "input": word, "output": word.upper()}
    if task == 1:
        words = rng.sample(WORDS, 3)
        return {
            "instruction": "Reverse the order of these words.",
            "input": " ".join(words),
            "output": " ".join(reversed(words)),
        }
    if task == 2:
        a, b = rng.randrange(50), rng.randrange(50)
        return {"instruction": "Add the two numbers.", "input": f"{a} + {b}", "output": str(a + b)}
    word = rng.choice(WORDS)
    return {"instruction": "How many letters does this word have?", "input": word, "output": str(len(word))}


def sample_rows(count: int = 600, seed: int = ASSET_SEED) -> list[dict]:
    rng = random.Random(seed)
    return [_task_row(rng) for _ in range(count)]


def _near_miss(row: dict, rng: random.Random) -> str:
    """A wrong answer close to the right one, so a preference between them is about the task, not the form."""
    output = row["output"]
    if output.isdigit():
        return str(int(output) + rng.choice((-2, -1, 1, 2)) if int(output) > 2 else int(output) + 1)
    return row["input"]  # the word not capitalised, or the words left in their order


def preference_rows(count: int = 300, seed: int = ASSET_SEED) -> list[dict]:
    """Pairs on the tiny tasks (the same prompts a user turn of tiny-tasks has): right answer chosen, near miss
    rejected."""
    rng = random.Random(seed + 1)
    rows = []
    for row in sample_rows(count, seed + 1):
        prompt = f"{row['instruction']}\n\n{row['input']}" if row["input"] else row["instruction"]
        rows.append({"prompt": prompt, "chosen": row["output"], "rejected": _near_miss(row, rng)})
    return rows


def feedback_rows(seed: int = ASSET_SEED) -> list[dict]:
    """The preference pairs taken apart into rated answers (right: desirable, near miss: undesirable), shuffled: KTO
    trains on rows in file order and estimates its KL term from neighbouring rows, so neither rating comes first and
    a pair's two answers are seldom neighbours."""
    rows = [{"prompt": pair["prompt"], "completion": pair[answer], "label": answer == "chosen"}
            for pair in preference_rows(seed=seed) for answer in ("chosen", "rejected")]
    random.Random(seed + 3).shuffle(rows)
    return rows


def _note_sentence(rng: random.Random) -> str:
    word, other = rng.sample(WORDS, 2)
    a, b = rng.randrange(50), rng.randrange(50)
    return rng.choice((
        f"In capital letters {word} is {word.upper()}.",
        f"The word {word} has {len(word)} letters.",
        f"{a} plus {b} makes {a + b}.",
        f"Reversed, {word} {other} reads {other} {word}.",
    ))


def text_rows(count: int = 200, seed: int = ASSET_SEED) -> list[dict]:
    """Notes of 3 to 8 sentences each: plain text for continued pretraining."""
    rng = random.Random(seed + 2)
    return [{"text": " ".join(_note_sentence(rng) for _ in range(rng.randint(3, 8)))} for _ in range(count)]


def capital_rows(seed: int = ASSET_SEED) -> list[dict]:
    """Prompt rows asking for the capitals, in a shuffled order, answered in the sentence an instruct model writes."""
    rows = [{"prompt": f"What is the capital of {country}?", "answer": f"The capital of {country} is {city}."}
            for country, city in CAPITALS]
    random.Random(seed + 4).shuffle(rows)
    return rows


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def write_sample_dataset(path: Path) -> None:
    _write_jsonl(path, sample_rows())


def _training_text(dataset_path: Path) -> list[str]:
    rows = [json.loads(line) for line in dataset_path.read_text(encoding="utf-8").splitlines()]
    return [" ".join((row["instruction"], row["input"], row["output"])) for row in rows]


def build_tokenizer(dataset_path: Path, vocab_size: int = 512):
    """A byte-level BPE trained on the sample dataset, so any text encodes and the task's words are few tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_training_text(dataset_path), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    wrapped.add_special_tokens({"additional_special_tokens": ["<|system|>", "<|user|>", "<|assistant|>"]})
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def build_tiny_model(dataset_path: Path, model_dir: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(dataset_path)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(ASSET_SEED)
    # PreTrainedModel.to is decorated with functools.wraps(Module.to), whose type takes the module as a first argument.
    model = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)


def build_assets(models_dir: Path, samples_dir: Path) -> None:
    """Write the sample datasets and the tiny model unless they already exist."""
    dataset_path = Path(samples_dir) / SAMPLE_DATASET_FILE
    if not dataset_path.exists():
        write_sample_dataset(dataset_path)
    for file_name, rows in ((PREFERENCE_DATASET_FILE, preference_rows), (FEEDBACK_DATASET_FILE, feedback_rows),
                            (TEXT_DATASET_FILE, text_rows), (CAPITALS_DATASET_FILE, capital_rows)):
        if not (Path(samples_dir) / file_name).exists():
            _write_jsonl(Path(samples_dir) / file_name, rows())
    model_dir = Path(models_dir) / TINY_MODEL_NAME
    if not (model_dir / "model.safetensors").exists():
        build_tiny_model(dataset_path, model_dir)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build_assets(Path(sys.argv[1]), Path(sys.argv[2]))
