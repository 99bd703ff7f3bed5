"""`tunelab pipelines templates | launch | list | show | watch | cancel`: runs that start from runs, launched together
(SFT → reward model → GRPO …), each stage queued when the one before it succeeds."""

import json
import time
from pathlib import Path
from typing import Any

import yaml
from rich.markup import escape
from rich.table import Table

from tunelab.commands import launch_spec, lookup
from tunelab.commands.common import Context, ExitCode, usage_error
from tunelab.commands.runs import STATUS_STYLE, WATCH_EXIT, _progress

FILE_KEYS = ("name", "project", "model", "base_run", "template", "queue", "stages")
STAGE_KEYS = ("name", "objective", "method", "dataset", "params", "start_from", "reward_from")
ACTIVE = ("queued", "running")
WATCH_POLL_S = 2.0


def _status(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def list_templates(ctx: Context) -> None:
    templates = ctx.client.get("/pipeline-templates")

    def render() -> None:
        for template in templates["data"]:
            ctx.out.print(f"[bold]{template['name']}[/]: {escape(template['title'])}")
            for number, stage in enumerate(template["stages"], start=1):
                start = stage["start_from"] if stage["start_from"] is not None else number - 1
                source = f"from stage {start}" if start else "from the model"
                reward = f", rewarded by stage {stage['reward_from']}" if stage["reward_from"] else ""
                ctx.out.print(f"  {number}. {escape(stage['name'])}: {stage['objective']} · {stage['method']} on "
                              f"{stage['suggested_dataset'] or '/'.join(stage['dataset_formats'])} ({source}{reward})",
                              highlight=False)

    ctx.emit(templates, render)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as error:
        raise usage_error("--file", f"cannot read {path}: {error.strerror}") from None
    try:
        loaded = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise usage_error("--file", f"{path.name} is not valid JSON or YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise usage_error("--file", f"{path.name} must hold a mapping of {', '.join(FILE_KEYS)}")
    for key in loaded:
        if key not in FILE_KEYS:
            raise usage_error(f"{path.name}: {key}", f"unknown key (expected one of {', '.join(FILE_KEYS)})")
    stages = loaded.get("stages", [])
    if not isinstance(stages, list) or not all(isinstance(stage, dict) for stage in stages):
        raise usage_error(f"{path.name}: stages", "must be a list of stages, each a mapping")
    for number, stage in enumerate(stages, start=1):
        for key in stage:
            if key not in STAGE_KEYS:
                raise usage_error(f"{path.name}: stages[{number}].{key}",
                                  f"unknown key (expected one of {', '.join(STAGE_KEYS)})")
    return loaded


def _stage_flag(given: str, flag: str, stage_count: int) -> tuple[int, str, str]:
    """`2=tiny-preferences` or `3.max_steps=2` as (0-based stage, name, value)."""
    target, sep, value = given.partition("=")
    number, dot, name = target.partition(".")
    if not sep or not number.strip().isdigit() or not 1 <= int(number) <= stage_count:
        shape = "STAGE.NAME=VALUE" if flag == "--param" else "STAGE=VALUE"
        raise usage_error(flag, f"{given!r} is not {shape} with STAGE from 1 to {stage_count}")
    if (flag == "--param") != bool(dot and name.strip()):
        raise usage_error(flag, f"{given!r}: give {'STAGE.NAME=VALUE' if flag == '--param' else 'STAGE=VALUE'}")
    return int(number) - 1, name.strip(), value


def _stages(ctx: Context, loaded: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The stages from the template (GET /pipeline-templates) or the file, and where each stage's values came from."""
    args, client = ctx.args, ctx.client
    template_name = args.template or loaded.get("template")
    if loaded.get("stages"):
        stages = [dict(stage) for stage in loaded["stages"]]
        origins = [{key: f"{Path(args.file).name}: stages[{n}].{key}" for key in stage}
                   for n, stage in enumerate(stages, start=1)]
    elif template_name:
        templates = {t["name"]: t for t in client.get("/pipeline-templates")["data"]}
        if template_name not in templates:
            raise usage_error("--template", f"unknown template {template_name!r} (one of {', '.join(templates)})")
        stages = [{"name": s["name"], "objective": s["objective"], "method": s["method"],
                   "dataset": s["suggested_dataset"], "params": dict(s["params"]), "start_from": s["start_from"],
                   "reward_from": s["reward_from"]} for s in templates[template_name]["stages"]]
        origins = [{} for _ in stages]
    else:
        raise usage_error("--template", "give a template (tunelab pipelines templates) or a --file with stages")
    for given in args.dataset or []:
        index, _, value = _stage_flag(given, "--dataset", len(stages))
        stages[index]["dataset"], origins[index]["dataset"] = value, f"--dataset {index + 1}"
    for given in args.method or []:
        index, _, value = _stage_flag(given, "--method", len(stages))
        stages[index]["method"], origins[index]["method"] = value, f"--method {index + 1}"
    for given in args.param or []:
        index, name, value = _stage_flag(given, "--param", len(stages))
        stages[index].setdefault("params", {})[name] = value
        origins[index][f"params.{name}"] = f"--param {index + 1}.{name}"
    return stages, origins


def launch_pipeline(ctx: Context) -> None:
    """Every stage's method, objective and params are checked against GET /methods before anything is posted (an
    error names the flag or the file's key); the server then checks each stage as a run and names `stages.N.field`."""
    args, client = ctx.args, ctx.client
    loaded = _read_file(Path(args.file)) if args.file else {}
    stages, origins = _stages(ctx, loaded)
    settings = {**{key: loaded[key] for key in ("name", "project", "model", "base_run", "queue", "template")
                   if loaded.get(key) is not None},
                **{key: value for key, value in (("name", args.name), ("project", args.project), ("model", args.model),
                                                 ("base_run", args.base_run), ("queue", args.queue),
                                                 ("template", args.template)) if value is not None}}
    if settings.get("model") is None and settings.get("base_run") is None:
        raise usage_error("--model", "required (or --base-run, a run whose weights the first stage starts from)")
    methods = client.get("/methods")
    project = lookup.project_id(client, settings.get("project"))
    body_stages = []
    for number, (stage, origin) in enumerate(zip(stages, origins, strict=True), start=1):
        spec = launch_spec.LaunchSpec(values={"method": stage.get("method"), "objective": stage.get("objective"),
                                              "dataset": stage.get("dataset"), "base_run": 0},
                                      origin={"method": origin.get("method", f"stage {number}: method"),
                                              "objective": origin.get("objective", f"stage {number}: objective"),
                                              "dataset": origin.get("dataset", f"--dataset {number}")})
        for name, value in (stage.get("params") or {}).items():
            spec.params[name] = value
            spec.origin[f"params.{name}"] = origin.get(f"params.{name}", f"stage {number}: params.{name}")
            if f"params.{name}" in origin and origin[f"params.{name}"].startswith("--param"):
                spec.flag_params.add(name)
        checked = launch_spec.check(spec, methods)
        body_stages.append({
            "name": stage.get("name") or f"{checked['objective']} {number}", "objective": checked["objective"],
            "method": checked["method"], "dataset_id": lookup.dataset_id(client, checked["dataset"], project),
            "params": checked["params"],
            **{key: stage[key] for key in ("start_from", "reward_from") if stage.get(key) is not None}})
    body: dict[str, Any] = {"name": settings.get("name") or settings.get("template") or "pipeline", "stages": body_stages,
                            **{key: settings[key] for key in ("model", "base_run", "queue", "template") if key in settings},
                            **({"project_id": project} if project is not None else {})}
    pipeline = client.launch("/pipelines", body, args.idempotency_key)
    first = pipeline["stages"][0]["run"]
    ctx.emit(pipeline, lambda: ctx.out.print(
        f"pipeline {pipeline['id']} ({escape(pipeline['name'])}): {len(body_stages)} stages; stage 1 is run "
        f"{first['id']}, {_status(first['status'])}: `tunelab pipelines watch {pipeline['id']}`"))


def list_pipelines(ctx: Context) -> None:
    args, client = ctx.args, ctx.client
    params: dict[str, Any] = {"limit": args.limit}
    if (project := lookup.project_id(client, args.project)) is not None:
        params["project_id"] = project
    page = client.get("/pipelines", params=params)

    def render() -> None:
        table = Table(title=f"{len(page['data'])} of {page['count']} pipelines")
        for column in ("id", "name", "status", "stages", "final run", "created"):
            table.add_column(column, justify="right" if column in ("id", "final run") else "left")
        for pipeline in page["data"]:
            chain = " → ".join(f"{escape(stage['name'])} {_status(status)}" for stage, status
                               in zip(pipeline["spec"]["stages"], pipeline["stage_statuses"], strict=True))
            table.add_row(str(pipeline["id"]), escape(pipeline["name"]), _status(pipeline["status"]), chain,
                          str(pipeline["final_run_id"] or ""), pipeline["created_at"][:19].replace("T", " "))
        ctx.out.print(table)

    ctx.emit(page, render)


def _stage_line(stage: dict[str, Any]) -> str:
    run = stage["run"]
    ran = f" run {run['id']} ({_progress(run)} steps)" if run else ""
    reward = f", reward accuracy {run['reward_accuracy']:.2f}" if run and run.get("reward_accuracy") is not None else ""
    reason = f": {escape(stage['reason'])}" if stage.get("reason") and stage["status"] != "succeeded" else ""
    return (f"  {stage['position'] + 1}. {escape(stage['name'])} ({stage['objective']} · {stage['method']}) "
            f"{_status(stage['status'])}{ran}{reward}{reason}")


def _print_pipeline(ctx: Context, pipeline: dict[str, Any]) -> None:
    ctx.out.print(f"pipeline {pipeline['id']} {escape(pipeline['name'])}: {_status(pipeline['status'])}")
    for stage in pipeline["stages"]:
        ctx.out.print(_stage_line(stage), highlight=False)


def show_pipeline(ctx: Context) -> None:
    pipeline = ctx.client.get(f"/pipelines/{ctx.args.pipeline_id}")
    ctx.emit(pipeline, lambda: _print_pipeline(ctx, pipeline))


def watch_pipeline(ctx: Context) -> int:
    """Follow the stages to the pipeline's end, a line each time a stage moves; exit 0 succeeded, 1 failed, 2
    canceled."""
    client, pipeline_id = ctx.client, ctx.args.pipeline_id
    shown: dict[int, str] = {}
    while True:
        pipeline = client.get(f"/pipelines/{pipeline_id}")
        if not ctx.json:
            for stage in pipeline["stages"]:
                line = _stage_line(stage)
                if shown.get(stage["position"]) != line:
                    shown[stage["position"]] = line
                    ctx.err.print(line, highlight=False)
        if pipeline["status"] not in ACTIVE:
            break
        time.sleep(WATCH_POLL_S)
    ctx.emit(pipeline, lambda: ctx.out.print(f"pipeline {pipeline_id} {_status(pipeline['status'])}"))
    return WATCH_EXIT.get(pipeline["status"], ExitCode.FAILED)


def cancel_pipeline(ctx: Context) -> None:
    pipeline = ctx.client.post(f"/pipelines/{ctx.args.pipeline_id}/cancel")
    ctx.emit(pipeline, lambda: _print_pipeline(ctx, pipeline))
