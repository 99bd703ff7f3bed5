"""The training process logs its own CPU and memory use (and the GPU's, on CUDA) as system/* metrics at trainer steps."""

from types import SimpleNamespace

import torch

from tunelab.training.engine import run_training
from tunelab.training.registry import resolve_params
from tunelab.training.sink import TrainingJob
from tunelab.training.system_metrics import SystemMetricsRecorder

from .conftest import RecordingSink, tiny_defaults

GPU_KEYS = {"system/gpu_memory_bytes", "system/gpu_utilization_percent"}


def test_a_short_run_records_cpu_and_memory_at_every_step_when_sampling_is_frequent(assets, tmp_path):
    job = TrainingJob(objective="sft", method="lora", model=str(assets.tiny_model), dataset_path=assets.sample_dataset,
                      dataset_format="instruction", output_dir=tmp_path / "run", system_metrics_interval_s=0,
                      params=resolve_params("lora", {**tiny_defaults("sft", "lora"), "max_steps": 3, "eval_steps": 3}))
    job.output_dir.mkdir()
    sink = RecordingSink()

    run_training(job, sink)

    assert [step for step, _ in sink.series("system/cpu_percent")] == [1, 2, 3]
    assert [step for step, _ in sink.series("system/rss_bytes")] == [1, 2, 3]
    # The tiny model's process still holds torch and transformers: well over 50 MiB resident.
    assert all(rss > 50 * 2**20 for _, rss in sink.series("system/rss_bytes"))
    assert all(cpu >= 0 for _, cpu in sink.series("system/cpu_percent"))
    logged = {key for _, values, _ in sink.metrics for key in values}
    if torch.cuda.is_available():
        assert all(memory > 0 for _, memory in sink.series("system/gpu_memory_bytes"))
    else:
        assert not logged & GPU_KEYS


def test_samples_are_spaced_by_the_interval_one_per_step_with_the_first_and_last_step_always():
    sink = RecordingSink()
    recorder = SystemMetricsRecorder(sink, interval_s=3600, gpu_sample=lambda: {"system/gpu_memory_bytes": 7.0})
    args = control = SimpleNamespace()
    recorder.on_train_begin(args, SimpleNamespace(global_step=0), control)
    for step in (1, 2, 3):
        recorder.on_step_end(args, SimpleNamespace(global_step=step), control)
    recorder.on_train_end(args, SimpleNamespace(global_step=3), control)
    recorder.on_train_end(args, SimpleNamespace(global_step=3), control)

    assert [step for step, _ in sink.series("system/rss_bytes")] == [1, 3]
    assert sink.series("system/gpu_memory_bytes") == [(1, 7.0), (3, 7.0)]
