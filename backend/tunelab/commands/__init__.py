"""The client verbs of `tunelab` (login, runs, pipelines, datasets, metrics, playground): they talk to a server over HTTP.

Registering them imports only argparse; a verb's module (httpx, rich) is imported when it runs, and none imports
torch, so `tunelab runs list` starts quickly.
"""

import argparse
import importlib
from collections.abc import Callable
from typing import Any

RUN_STATUSES = ("queued", "running", "succeeded", "failed", "canceled")
PLAYGROUND_HELP = """

playground: exit 1 when a completion failed, the request expired unserved, or the server refused it (409: a run that
has not succeeded or saved no weights; 429: over your share, named with its Retry-After); exit 6 also when --timeout
passed. --json prints the request with each slot's outcome (status, text, token_count, first_token_s, total_s, or
error) and its status: succeeded, failed or expired

example:
  tunelab playground 12 --prompt 'What is 2 plus 3?' --max-new-tokens 24
  tunelab playground 12 13 --include-base --prompt 'Say hi' --sample --temperature 0.7 --seed 3
  tunelab playground 12 --reward-run 14 --prompt 'What is 2 plus 3?' --completion 5"""
IDEMPOTENCY_KEY_HELP = ("send the launch under this key (default: a new one, named in a timeout's error): the same "
                        "key again within 24 h gets the run it created instead of a second one")


def _verb(target: str) -> Callable[[argparse.Namespace], None]:
    module_name, function_name = target.split(":")

    def run(args: argparse.Namespace) -> None:
        from tunelab.commands.common import run_command

        handler = getattr(importlib.import_module(f"tunelab.commands.{module_name}"), function_name)
        run_command(handler, args)

    return run


def _parser(sub: Any, name: str, help_text: str, target: str, parents: list[argparse.ArgumentParser],
            epilog: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=help_text, description=help_text, parents=parents, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=_verb(target))
    return parser


def add_client_commands(sub: Any) -> None:
    """Add login, runs, pipelines, datasets, metrics and playground to the `tunelab` subparsers."""
    from tunelab.commands.options import EXIT_CODES_HELP, client_options, seconds

    common = [client_options()]
    _parser(sub, "login", "check an API token against a server and save both (0600) for later commands",
            "login:login", common, EXIT_CODES_HELP)

    runs = sub.add_parser("runs", help="list, launch, watch and manage runs on a server",
                          epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = runs.add_subparsers(dest="runs_command", required=True)
    listing = _parser(verbs, "list", "the newest runs, as a table", "runs:list_runs", common, EXIT_CODES_HELP)
    listing.add_argument("--project", help="project name or id (default: every project of yours)")
    listing.add_argument("--status", action="append", choices=RUN_STATUSES, help="repeat for several")
    listing.add_argument("--tag", action="append", help="runs having this tag; repeat for all of several")
    listing.add_argument("--limit", type=int, default=20, help="most runs shown (1-200, default 20)")
    _parser(verbs, "show", "one run: status, progress, losses, params", "runs:show_run", common,
            EXIT_CODES_HELP).add_argument("run_id", type=int)

    launch = _parser(verbs, "launch", "queue a run from flags or a YAML/JSON file (flags win), checked against the "
                     "method's schema (GET /methods) before it is sent", "runs:launch_run", common,
                     EXIT_CODES_HELP + "\n\nexample:\n  tunelab runs launch --method lora --model tunelab-tiny "
                     "--dataset tiny-tasks --param r=8 --param max_steps=20\n\na run file (YAML or JSON) "
                     "holds the same keys: name, project, objective, method, model, base_run, dataset, queue, params")
    launch.add_argument("--file", "-f", help="run.yaml or run.json")
    launch.add_argument("--method", help="fine-tuning method (lora, full, …; GET /methods)")
    launch.add_argument("--objective", help="training objective (default sft)")
    launch.add_argument("--model", help="base model name (GET /models); not needed with --base-run")
    launch.add_argument("--base-run", type=int, metavar="RUN_ID",
                        help="start from this succeeded run's weights (e.g. DPO after an SFT run)")
    launch.add_argument("--dataset", help="dataset name or id")
    launch.add_argument("--project", help="project name or id")
    launch.add_argument("--name", help="run name (default <method>-<model>-<n>)")
    launch.add_argument("--queue", help="a training queue the server declares (GET /queues; default the server's)")
    launch.add_argument("--param", action="append", metavar="NAME=VALUE", help="a method param; repeat")
    launch.add_argument("--idempotency-key", metavar="KEY", help=IDEMPOTENCY_KEY_HELP)

    _parser(verbs, "watch", "follow a run live (progress bar, last losses) until it finishes; exits 0 when it "
            "succeeds, 1 when it fails, 2 when it is canceled", "runs:watch_run", common,
            EXIT_CODES_HELP).add_argument("run_id", type=int)
    logs = _parser(verbs, "logs", "the run's training log (its tail)", "runs:show_logs", common, EXIT_CODES_HELP)
    logs.add_argument("run_id", type=int)
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run finishes")
    logs.add_argument("--tail-bytes", type=int, default=64 * 1024, help="how much of the end to print first")
    cancel = _parser(verbs, "cancel", "stop a run (a running one stops at its next step, resumable)",
                     "runs:cancel_run", common, EXIT_CODES_HELP)
    cancel.add_argument("run_id", type=int)
    cancel.add_argument("--force", action="store_true", help="kill the training process now")
    resume = _parser(verbs, "resume", "queue a canceled or failed run again, from its newest checkpoint",
                     "runs:resume_run", common, EXIT_CODES_HELP)
    resume.add_argument("run_id", type=int)
    download = _parser(verbs, "download", "save a run's trained weights as a zip: its adapter (with the tokenizer; "
                       "PEFT loads it), its full model, or a merged export", "weights:download_weights", common,
                       EXIT_CODES_HELP)
    download.add_argument("run_id", type=int)
    download.add_argument("--folder", choices=("adapter", "model", "merged"),
                          help="which weights (default: the adapter, or the model of a full fine-tuning run)")
    download.add_argument("-o", "--output", help="the zip to write (default run-<id>-<folder>.zip)")
    download.add_argument("--force", action="store_true", help="replace the file if it exists")
    merged = _parser(verbs, "export-merged", "have a worker merge the run's adapter into its base model (a plain "
                     "transformers model), waiting until it is done; then `runs download --folder merged`",
                     "weights:export_merged", common, EXIT_CODES_HELP)
    merged.add_argument("run_id", type=int)
    merged.add_argument("--no-wait", action="store_true", help="return once the export is queued")
    clone = _parser(verbs, "clone", "queue a copy of a run, params overridden by --param", "runs:clone_run", common,
                    EXIT_CODES_HELP)
    clone.add_argument("run_id", type=int)
    clone.add_argument("--name")
    clone.add_argument("--queue", help="a training queue the server declares (GET /queues; default the run's)")
    clone.add_argument("--param", action="append", metavar="NAME=VALUE", help="a param to change; repeat")
    clone.add_argument("--idempotency-key", metavar="KEY", help=IDEMPOTENCY_KEY_HELP)

    _add_pipeline_commands(sub, common)

    datasets = sub.add_parser("datasets", help="upload and list datasets on a server")
    dataset_verbs = datasets.add_subparsers(dest="datasets_command", required=True)
    upload = _parser(dataset_verbs, "upload", "upload a JSONL or CSV file (a progress bar; errors by line number)",
                     "datasets:upload_dataset", common, EXIT_CODES_HELP)
    upload.add_argument("file", metavar="FILE")
    upload.add_argument("--name", help="default: the file name without extension")
    upload.add_argument("--format", help="instruction, chat, text, preference, feedback or prompt (default: detected)")
    upload.add_argument("--project", help="project name or id")
    listed = _parser(dataset_verbs, "list", "the datasets a launch can name, as a table", "datasets:list_datasets",
                     common, EXIT_CODES_HELP)
    listed.add_argument("--project", help="project name or id (default: every project of yours)")
    listed.add_argument("--limit", type=int, default=50, help="most datasets shown (1-100, default 50)")

    metrics = sub.add_parser("metrics", help="export a run's metrics")
    metric_verbs = metrics.add_subparsers(dest="metrics_command", required=True)
    export = _parser(metric_verbs, "export", "every logged point of a run (key, step, value, wall_time), never "
                     "downsampled, streamed", "metrics:export_metrics", common, EXIT_CODES_HELP)
    export.add_argument("run_id", type=int)
    export.add_argument("--key", action="append", help="only this metric key; repeat for several")
    export.add_argument("--csv", action="store_true", help="CSV (the default; --json alone gives a JSON array)")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")

    playground = _parser(sub, "playground", "send a prompt to succeeded runs (and their base model with "
                         "--include-base) on the server's inference worker; at a terminal the tokens are printed as "
                         "they are generated, elsewhere (a pipe, a file) the completion once it is done",
                         "playground:prompt_runs", common, EXIT_CODES_HELP + PLAYGROUND_HELP)
    playground.add_argument("run_ids", type=int, nargs="*", metavar="RUN",
                            help="a run id (up to 6 runs of one base model, in one project you edit)")
    source = playground.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", metavar="TEXT", help="the text sent (1-20,000 characters)")
    source.add_argument("--dataset", help="instead of --prompt: a dataset (name or id) whose row --row is sent, its "
                        "answer shown as `expected`")
    playground.add_argument("--row", type=int, metavar="N", help="with --dataset: the 0-based row")
    playground.add_argument("--include-base", action="store_true",
                            help="a completion of the runs' base model too, before theirs")
    playground.add_argument("--max-new-tokens", type=int, metavar="N", help="tokens generated at most per model "
                            "(the server's default 64, bounds 1-512)")
    playground.add_argument("--sample", action="store_true",
                            help="sample with --temperature, --top-p and --top-k (default: greedy)")
    playground.add_argument("--temperature", type=float, metavar="T", help="with --sample (default 1.0; above 0, at most 5)")
    playground.add_argument("--top-p", type=float, metavar="P", help="with --sample (default 1.0; above 0, at most 1)")
    playground.add_argument("--top-k", type=int, metavar="K", help="with --sample (default 50; 0 for no top-k cut)")
    playground.add_argument("--seed", type=int, metavar="N", help="makes a sampled completion reproducible (default 0)")
    playground.add_argument("--ignore-eos", action="store_true",
                            help="generate --max-new-tokens even past the end-of-sequence token")
    playground.add_argument("--reward-run", type=int, metavar="RUN",
                            help="a succeeded reward run: its model scores each completion (printed on stderr)")
    playground.add_argument("--completion", metavar="TEXT",
                            help="with --reward-run: a completion of your own to score too (no RUN needed then)")
    playground.add_argument("--timeout", type=seconds, metavar="SECONDS",
                            help="give up following the request after this long, exit 6 (default: none; it is "
                            "followed while it waits in line and generates)")


PIPELINE_HELP = """

example:
  tunelab pipelines launch --template rlhf --model smollm2-135m-instruct --dataset 1=my-sft-data \\
      --dataset 2=my-preferences --param 3.max_steps=200
  tunelab pipelines watch 4

a pipeline file (YAML or JSON) holds name, project, model, base_run, template, queue and stages, each stage name,
objective, method, dataset, params, start_from (the stage number whose weights it starts from; 0: the model) and
reward_from (the reward stage that scores an RL stage); --dataset, --method and --param change a stage by its number"""


def _add_pipeline_commands(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    from tunelab.commands.options import EXIT_CODES_HELP

    pipelines = sub.add_parser("pipelines", help="launch and follow pipelines: runs that start from runs (SFT → "
                               "reward model → GRPO …), each stage queued when the one before it succeeds",
                               epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = pipelines.add_subparsers(dest="pipelines_command", required=True)
    _parser(verbs, "templates", "the server's pipeline templates and their stages", "pipelines:list_templates",
            common, EXIT_CODES_HELP)
    launch = _parser(verbs, "launch", "launch a pipeline from a template or a YAML/JSON file (flags win); every "
                     "stage is checked before anything is queued", "pipelines:launch_pipeline", common,
                     EXIT_CODES_HELP + PIPELINE_HELP)
    launch.add_argument("--file", "-f", help="pipeline.yaml or pipeline.json")
    launch.add_argument("--template", help="rlhf, sft-dpo, pretrain-sft … (tunelab pipelines templates)")
    launch.add_argument("--model", help="base model of the first stage (GET /models)")
    launch.add_argument("--base-run", type=int, metavar="RUN_ID", help="start the first stage from this run's weights")
    launch.add_argument("--name", help="pipeline name (default: the template's)")
    launch.add_argument("--project", help="project name or id")
    launch.add_argument("--queue", help="a training queue the server declares (GET /queues; default the server's)")
    launch.add_argument("--dataset", action="append", metavar="STAGE=DATASET",
                        help="a stage's dataset (name or id), e.g. 2=my-preferences; repeat")
    launch.add_argument("--method", action="append", metavar="STAGE=METHOD", help="a stage's method; repeat")
    launch.add_argument("--param", action="append", metavar="STAGE.NAME=VALUE",
                        help="a stage's param, e.g. 3.max_steps=200; repeat")
    launch.add_argument("--idempotency-key", metavar="KEY", help=IDEMPOTENCY_KEY_HELP)
    listing = _parser(verbs, "list", "the newest pipelines, each stage's status", "pipelines:list_pipelines", common,
                      EXIT_CODES_HELP)
    listing.add_argument("--project", help="project name or id (default: every project of yours)")
    listing.add_argument("--limit", type=int, default=20, help="most pipelines shown (1-200, default 20)")
    for verb, help_text, target in (
            ("show", "one pipeline: each stage's status, run, progress and why a stage was canceled",
             "pipelines:show_pipeline"),
            ("watch", "follow a pipeline stage by stage until it ends; exits 0 when every stage succeeded, 1 when one "
             "failed, 2 when it was canceled", "pipelines:watch_pipeline"),
            ("cancel", "cancel the stage running (it stops at its next step) and every stage after it",
             "pipelines:cancel_pipeline")):
        _parser(verbs, verb, help_text, target, common, EXIT_CODES_HELP).add_argument("pipeline_id", type=int)
