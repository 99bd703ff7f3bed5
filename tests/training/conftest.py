"""Fixtures for the training engine: offline assets built once per session, a sink that records into lists."""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from tunelab.assets.build import (  # noqa: E402
    CAPITALS_DATASET_FILE,
    FEEDBACK_DATASET_FILE,
    PREFERENCE_DATASET_FILE,
    SAMPLE_DATASET_FILE,
    TEXT_DATASET_FILE,
    TINY_MODEL_NAME,
    TINY_PARAM_DEFAULTS,
    build_assets,
)
from tunelab.training.engine import run_training  # noqa: E402
from tunelab.training.registry import get_objective, model_defaults_for, resolve_params  # noqa: E402
from tunelab.training.sink import TrainingJob, TrainingResult  # noqa: E402

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if HERE in Path(item.path).parents and "requires_gpu" in item.keywords:
            item.add_marker(skip)


@dataclass
class RecordingSink:
    """A RunSink that keeps everything in lists; `cancel_after_step` makes should_cancel turn True after that step."""

    cancel_after_step: int | None = None
    metrics: list[tuple[int, dict[str, float], float]] = field(default_factory=list)
    progress_calls: list[tuple[int, int]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    checkpoints: list[int] = field(default_factory=list)
    flushes: int = 0
    # Each phase the engine reported, in order, with the step count at the time.
    phases: list[tuple[str, int]] = field(default_factory=list)

    def phase(self, phase: str) -> None:
        step = self.progress_calls[-1][0] if self.progress_calls else 0
        if not self.phases or self.phases[-1][0] != phase:
            self.phases.append((phase, step))

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        self.metrics.append((step, dict(values), wall_time))

    def progress(self, step: int, total_steps: int) -> None:
        self.progress_calls.append((step, total_steps))

    def should_cancel(self) -> bool:
        last_step = self.progress_calls[-1][0] if self.progress_calls else 0
        return self.cancel_after_step is not None and last_step >= self.cancel_after_step

    def set_summary(self, values: dict[str, Any]) -> None:
        self.summary.update(values)

    def checkpoint_saved(self, step: int) -> None:
        self.checkpoints.append(step)

    def flush(self) -> None:
        self.flushes += 1

    def series(self, key: str) -> list[tuple[int, float]]:
        """(step, value) of one metric key, in logging order."""
        return [(step, values[key]) for step, values, _ in self.metrics if key in values]


@dataclass(frozen=True)
class Assets:
    models_dir: Path
    samples_dir: Path

    @property
    def tiny_model(self) -> Path:
        return self.models_dir / TINY_MODEL_NAME

    @property
    def sample_dataset(self) -> Path:
        return self.samples_dir / SAMPLE_DATASET_FILE

    @property
    def preference_dataset(self) -> Path:
        return self.samples_dir / PREFERENCE_DATASET_FILE

    @property
    def feedback_dataset(self) -> Path:
        return self.samples_dir / FEEDBACK_DATASET_FILE

    @property
    def text_dataset(self) -> Path:
        return self.samples_dir / TEXT_DATASET_FILE

    @property
    def capital_questions(self) -> Path:
        return self.samples_dir / CAPITALS_DATASET_FILE


@pytest.fixture(scope="session")
def assets(tmp_path_factory) -> Assets:
    root = tmp_path_factory.mktemp("assets")
    built = Assets(root / "models", root / "samples")
    build_assets(built.models_dir, built.samples_dir)
    return built


def tiny_defaults(objective: str, method: str) -> dict[str, Any]:
    """The tiny model's own defaults for `method`, as `objective` takes them (the API applies the same)."""
    return model_defaults_for(get_objective(objective), TINY_PARAM_DEFAULTS.get(method, {}))


@pytest.fixture
def train(assets, tmp_path):
    """Run the engine on the tiny model: train(method, objective=..., dataset_format=..., dataset_path=..., sink=...,
    **params). The tiny model's own defaults apply, as they do for a launch through the API; another model takes the
    method's."""

    def _train(
        method: str,
        *,
        objective: str = "sft",
        sink: RecordingSink | None = None,
        dataset_path: Path | None = None,
        dataset_format: str = "instruction",
        model: Path | None = None,
        start_from: tuple = (),
        start_tokenizer_dir: Path | None = None,
        scoring_model: Any = None,
        **params: Any,
    ) -> tuple[TrainingResult, RecordingSink, TrainingJob]:
        sink = sink or RecordingSink()
        job = TrainingJob(
            objective=objective,
            method=method,
            model=str(model or assets.tiny_model),
            dataset_path=dataset_path or assets.sample_dataset,
            dataset_format=dataset_format,
            params=resolve_params(method, {**(tiny_defaults(objective, method) if model is None else {}), **params},
                                  objective),
            # Numbered, so that a test may train the same objective and method twice.
            output_dir=tmp_path / f"run-{objective}-{method}-{len(list(tmp_path.glob('run-*')))}",
            start_from=start_from, start_tokenizer_dir=start_tokenizer_dir, reward_model=scoring_model,
        )
        job.output_dir.mkdir()
        return run_training(job, sink), sink, job

    return _train


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
