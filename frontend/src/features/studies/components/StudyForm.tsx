// The study form: one base model (or a run's trained weights) and dataset, several methods, an optional grid over
// their params, seeds and one budget for all; its fields labelled as the run launch form labels them.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import type { FormEvent, MouseEvent } from "react";
import { Link, useNavigate } from "react-router";

import { ApiError } from "../../../api/client";
import type { Dataset, Schemas } from "../../../api/client";
import { Card, ErrorBox } from "../../../components/ui/ui";
import { ModelOptions, TopField, UnavailableModels, inputProps } from "../../launch";
import { runsQueryOptions } from "../../runs";
import { useCreateStudy } from "../api/queries";
import {
  boundsText,
  checkGrid,
  gridParamLabel,
  gridParams,
  methodDefaults,
  paramNamesOf,
  parseSharedValue,
  sharedParams,
  valuesHint,
  type ParamSpec,
} from "../gridParams";
import { countRuns, gridOf, parseSeeds, type GridRow } from "../plan";

export type StudyCatalog = {
  objectives: Schemas["ObjectivePublic"][];
  methods: Schemas["MethodPublic"][];
  models: Schemas["ModelPublic"][];
  datasets: Dataset[];
};

/** A training queue the server declares (GET /queues), with the launch form's label for it. */
export type StudyQueue = Schemas["QueuePublic"] & { label: string };

const MAX_RUNS = 48;
const GRID_ROWS = 3;
// The succeeded runs of the project a study may start from, newest first.
const BASE_RUNS_LISTED = 100;

/** Datasets an objective can train on, bundled ones first (as the launch form lists them). */
function datasetsFor(catalog: StudyCatalog, objective: string): Dataset[] {
  const formats = catalog.objectives.find((o) => o.name === objective)?.dataset_formats ?? [];
  return catalog.datasets.filter((d) => formats.includes(d.format)).sort((a, b) => Number(b.bundled) - Number(a.bundled));
}

const asText = (value: unknown) => (value === null || value === undefined ? "" : String(value));

export function StudyForm({ catalog, queues, projectId }: { catalog: StudyCatalog; queues: StudyQueue[]; projectId: number | undefined }) {
  const navigate = useNavigate();
  const create = useCreateStudy();
  const startable = useQuery({
    ...runsQueryOptions({ project_id: projectId, status: ["succeeded"], limit: BASE_RUNS_LISTED }),
    enabled: projectId !== undefined,
  });
  // A run logged from outside Tunelab has no weights here to start from.
  const baseRuns = useMemo(() => (startable.data?.data ?? []).filter((run) => !run.external), [startable.data]);

  const [name, setName] = useState("");
  const [objectiveName, setObjectiveName] = useState(() =>
    (catalog.objectives.find((o) => o.is_default) ?? catalog.objectives[0])?.name ?? "",
  );
  const [modelName, setModelName] = useState(() => catalog.models.find((m) => m.available)?.name ?? "");
  const [baseRunId, setBaseRunId] = useState("");
  const [datasetId, setDatasetId] = useState(() => String(datasetsFor(catalog, objectiveName)[0]?.id ?? ""));
  const [queueName, setQueueName] = useState(() => (queues.find((q) => q.default) ?? queues[0])?.name ?? "");
  const [picked, setPicked] = useState<string[]>([]);
  const [rows, setRows] = useState<GridRow[]>(() => Array.from({ length: GRID_ROWS }, () => ({ param: "", values: "" })));
  const [seedsText, setSeedsText] = useState("42");
  const [budgetKind, setBudgetKind] = useState<"max_steps" | "train_tokens">("max_steps");
  const [budget, setBudget] = useState("20");
  /** Shared params as typed; the others show their defaults for the picked methods and model. */
  const [sharedEdited, setSharedEdited] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [topError, setTopError] = useState<unknown>(null);
  // After a refused launch focus lands on the summary of what to fix; each refusal counts, so the same one twice
  // focuses it again.
  const [failedSubmits, setFailedSubmits] = useState(0);
  const summaryRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (failedSubmits > 0) summaryRef.current?.focus();
  }, [failedSubmits]);

  const objective = catalog.objectives.find((o) => o.name === objectiveName);
  const methods = catalog.methods.filter((m) => m.objectives.includes(objectiveName));
  const pickedMethods = useMemo(
    () => picked.flatMap((p) => catalog.methods.find((m) => m.name === p) ?? []),
    [picked, catalog.methods],
  );
  const datasets = datasetsFor(catalog, objectiveName);
  const baseRun = baseRuns.find((run) => String(run.id) === baseRunId);
  // From a run, the model is the one its weights were trained from: the server takes it from the run.
  const shownModel = baseRun?.model ?? modelName;
  const model = catalog.models.find((m) => m.name === shownModel);
  const unavailable = baseRun ? [] : catalog.models.filter((m) => !m.available);
  const modelOptions = model || !shownModel ? catalog.models : [...catalog.models, { name: shownModel, title: shownModel, available: true }];
  const queue = queues.find((q) => q.name === queueName);
  const inTokens = budgetKind === "train_tokens";

  const params = useMemo(
    () => gridParams(objective, pickedMethods, (method) => methodDefaults(method, model, objective)),
    [objective, pickedMethods, model],
  );
  // The shared params are labelled and bounded by the picked methods' schema (any of the objective's before a pick).
  const sharedFrom = pickedMethods.length > 0 ? pickedMethods : methods;
  const shared = sharedParams(objective, sharedFrom);
  const sharedDefaults = sharedFrom[0] ? methodDefaults(sharedFrom[0], model, objective) : {};
  const sharedValue = (spec: ParamSpec) => sharedEdited[spec.name] ?? asText(spec.name in sharedDefaults ? sharedDefaults[spec.name] : spec.default);
  const griddedRow = (param: string) => rows.findIndex((row) => row.param === param);

  const seeds = parseSeeds(seedsText);
  const countedGrid = gridOf(rows);
  const runCount = countRuns(picked, countedGrid, seeds?.length ?? 0, (methodName) =>
    paramNamesOf(catalog.methods.find((m) => m.name === methodName), objective),
  );

  const known = [
    "name", "objective", "base_run", "model", "dataset_id", "queue", "methods", "grid", "seeds", `budget.${budgetKind}`,
    ...rows.map((_, index) => `grid.${index}`),
    ...shared.map((spec) => `params.${spec.name}`),
  ];
  // Each error at the input it names, else the longest rendered path it starts with (`seeds.0` → `seeds`).
  const byLength = [...known].sort((a, b) => b.length - a.length);
  const byField: Record<string, string> = {};
  const unmatched: string[] = [];
  for (const [path, message] of Object.entries(errors)) {
    const target = byLength.find((field) => path === field || path.startsWith(`${field}.`));
    if (target) byField[target] ??= message;
    else unmatched.push(message);
  }

  const clearError = (path: string) =>
    setErrors((current) => {
      if (!(path in current)) return current;
      const { [path]: _removed, ...rest } = current;
      return rest;
    });

  const changeObjective = (next: string) => {
    clearError("objective");
    setObjectiveName(next);
    const fits = datasetsFor(catalog, next);
    setDatasetId((current) => (fits.some((d) => String(d.id) === current) ? current : String(fits[0]?.id ?? "")));
    setPicked((current) => current.filter((p) => catalog.methods.find((m) => m.name === p)?.objectives.includes(next)));
  };

  const toggle = (method: string) => {
    clearError("methods");
    setPicked((current) => (current.includes(method) ? current.filter((m) => m !== method) : [...current, method]));
  };

  const editRow = (index: number, change: Partial<GridRow>) => {
    clearError(`grid.${index}`);
    setRows((current) => current.map((row, i) => (i === index ? { ...row, ...change } : row)));
  };

  const focusField = (event: MouseEvent, path: string) => {
    const field = document.getElementById(`field-${path}`);
    if (!field) return;
    event.preventDefault();
    field.focus();
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    const local: Record<string, string> = {};
    if (!name.trim()) local.name = "Give the study a name";
    if (picked.length === 0) local.methods = "Pick at least one method";
    if (!baseRun && !modelName) local.model = "Choose a model";
    if (!datasetId) local.dataset_id = "Pick a dataset";
    if (seeds === null || seeds.length === 0) local.seeds = "Whole numbers separated by commas, e.g. 1, 2, 3";
    const budgetValue = Number(budget);
    if (!Number.isInteger(budgetValue) || budgetValue < 1) local[`budget.${budgetKind}`] = "A whole number of at least 1";
    const checked = checkGrid(rows, params, inTokens);
    for (const [index, message] of Object.entries(checked.errors)) local[`grid.${index}`] = message;
    const sharedValues: Record<string, number> = {};
    for (const spec of shared) {
      // A param the grid varies is the grid's, not shared: the API refuses it in both.
      if (griddedRow(spec.name) >= 0) continue;
      const parsed = parseSharedValue(spec, sharedValue(spec));
      if ("error" in parsed) local[`params.${spec.name}`] = parsed.error;
      else sharedValues[spec.name] = parsed.value;
    }
    setTopError(null);
    setErrors(local);
    if (Object.keys(local).length > 0 || seeds === null) {
      setFailedSubmits((count) => count + 1);
      return;
    }
    create.mutate(
      {
        project_id: projectId ?? null,
        name: name.trim(),
        objective: objectiveName,
        // From a run, the server takes its base model.
        ...(baseRun ? { base_run: baseRun.id } : { model: modelName }),
        dataset_id: Number(datasetId),
        queue: queue?.name ?? null,
        methods: picked,
        grid: checked.grid,
        seeds,
        budget: budgetKind === "max_steps" ? { max_steps: budgetValue } : { train_tokens: budgetValue },
        params: sharedValues,
      },
      {
        onSuccess: (detail) => navigate(`/studies/${detail.study.id}`),
        onError: (error) => {
          const fields = error instanceof ApiError ? error.fieldErrors() : {};
          const mapped: Record<string, string> = {};
          for (const [field, message] of Object.entries(fields)) {
            // A grid param's error shows at its row; other fields at their own input. The message names the
            // combination that failed (method, grid values, seed).
            const row = rows.findIndex((r) => r.param !== "" && `grid.${r.param}` === field);
            mapped[row >= 0 ? `grid.${row}` : field] = error instanceof ApiError ? error.message : message;
          }
          setErrors(mapped);
          setTopError(Object.keys(mapped).length > 0 ? null : error);
          setFailedSubmits((count) => count + 1);
        },
      },
    );
  };

  const fieldErrors = Object.entries(byField);
  const baseRunHelp = baseRun ? (
    <>
      Every run trains on top of <Link to={`/runs/${baseRun.id}`}>run #{baseRun.id} {baseRun.name}</Link>'s trained weights and
      tokenizer.
    </>
  ) : startable.isPending && projectId !== undefined ? (
    "Loading the project's succeeded runs…"
  ) : startable.error ? (
    `The project's runs could not be listed: ${startable.error.message}`
  ) : baseRuns.length === 0 ? (
    "No succeeded run in this project yet: every run starts from the base model."
  ) : (
    "A succeeded run of this project: every run of the study trains on top of its weights (e.g. methods compared after an SFT run)."
  );

  return (
    <form className="study-form" onSubmit={submit} data-testid="study-form" noValidate>
      <div ref={summaryRef} tabIndex={-1} className="error-summary-anchor">
        {failedSubmits > 0 && fieldErrors.length > 0 && (
          <div className="error-box" role="alert" data-testid="study-error-summary">
            The study was not launched: {fieldErrors.length === 1 ? "one field needs" : `${fieldErrors.length} fields need`} attention ·{" "}
            {fieldErrors.map(([path, message], index) => (
              <span key={path}>
                {index > 0 && " · "}
                <a href={`#field-${path}`} onClick={(event) => focusField(event, path)}>
                  {summaryLabel(path, rows)}
                </a>
                : {message.replace(/^[\w.]+: /, "")}
              </span>
            ))}
          </div>
        )}
        {unmatched.length > 0 && <ErrorBox error={[...new Set(unmatched)].join(" · ")} testId="study-form-error" />}
        {topError !== null && <ErrorBox error={topError} testId="study-form-error" />}
      </div>

      <Card title="What to compare">
        <div className="form-grid">
          <TopField name="name" label="Study name" error={byField.name} help="Each run is named <study> · <method>, <grid values>, seed <n>">
            <input
              {...inputProps("name", byField.name)}
              type="text"
              value={name}
              onChange={(e) => {
                clearError("name");
                setName(e.target.value);
              }}
            />
          </TopField>
          <TopField name="objective" label="Objective" error={byField.objective} help={objective?.description}>
            <select {...inputProps("objective", byField.objective)} value={objectiveName} onChange={(e) => changeObjective(e.target.value)}>
              {catalog.objectives.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.title}
                </option>
              ))}
            </select>
          </TopField>
          <TopField name="base_run" label="Start every run from" error={byField.base_run} help={baseRunHelp}>
            <select
              {...inputProps("base_run", byField.base_run)}
              value={baseRunId}
              onChange={(e) => {
                clearError("base_run");
                clearError("model");
                setBaseRunId(e.target.value);
              }}
            >
              <option value="">The base model's own weights</option>
              {baseRuns.map((run) => (
                <option key={run.id} value={String(run.id)}>
                  #{run.id} {run.name} · {run.objective} · {run.method} · {run.model}
                </option>
              ))}
            </select>
          </TopField>
          <TopField
            name="model"
            label="Base model"
            error={byField.model}
            help={
              <>
                {baseRun && (
                  <span data-testid="model-fixed">
                    Fixed: the runs start from run #{baseRun.id}'s trained weights, which fit no other model.{" "}
                  </span>
                )}
                {model && <span>{model.description}</span>}
                <UnavailableModels models={unavailable} />
              </>
            }
          >
            <select
              {...inputProps("model", byField.model)}
              value={shownModel}
              disabled={baseRun !== undefined}
              onChange={(e) => {
                clearError("model");
                setModelName(e.target.value);
              }}
            >
              {!shownModel && <option value="">—</option>}
              <ModelOptions models={modelOptions} />
            </select>
          </TopField>
          <TopField
            name="dataset_id"
            label="Dataset"
            error={byField.dataset_id}
            help={
              <>
                Formats: {objective?.dataset_formats.join(", ")}. <Link to="/datasets">Upload a dataset</Link>
              </>
            }
          >
            <select
              {...inputProps("dataset_id", byField.dataset_id)}
              value={datasetId}
              onChange={(e) => {
                clearError("dataset_id");
                setDatasetId(e.target.value);
              }}
            >
              {datasetId === "" && <option value="">—</option>}
              {datasets.map((d) => (
                <option key={d.id} value={String(d.id)}>
                  {d.name} · {d.format} · {d.row_count} rows{d.bundled ? " · bundled" : ""}
                </option>
              ))}
            </select>
          </TopField>
          <TopField
            name="queue"
            label="Queue"
            error={byField.queue}
            help="The training queues this server declares, with the workers seen on each now; a run waits for one."
          >
            <select
              {...inputProps("queue", byField.queue)}
              value={queue?.name ?? ""}
              onChange={(e) => {
                clearError("queue");
                setQueueName(e.target.value);
              }}
            >
              {queues.map((q) => (
                <option key={q.name} value={q.name}>
                  {q.label}
                </option>
              ))}
            </select>
          </TopField>
        </div>
        <fieldset className="field" data-testid="study-methods" id="field-methods" tabIndex={-1}>
          <legend>Methods</legend>
          {methods.map((m) => (
            <label key={m.name} className="checkbox-label" title={m.description}>
              <input type="checkbox" name="methods" value={m.name} checked={picked.includes(m.name)} onChange={() => toggle(m.name)} />
              {m.title}
              {m.requires_cuda ? " (CUDA GPU queues only)" : ""}
            </label>
          ))}
          {byField.methods && (
            <div className="field-error" data-testid="field-error-methods">
              {byField.methods}
            </div>
          )}
        </fieldset>
      </Card>

      <Card title="Grid (optional)">
        <p className="help">
          Up to three params of the picked methods, each with comma-separated values; a method gets the cells of the params
          it has. The budget, seed and eval split are the study's own. Batch size, gradient accumulation, max length and
          processes change the tokens of a step: to vary them, give the budget in training tokens, so that every run
          trains on the same number of tokens.
        </p>
        {byField.grid && (
          <div className="field-error" id="field-grid" tabIndex={-1} data-testid="field-error-grid">
            {byField.grid}
          </div>
        )}
        {rows.map((row, index) => {
          const param = params.find((p) => p.name === row.param);
          const error = byField[`grid.${index}`];
          return (
            <div className="grid-row" key={index}>
              <TopField name={`grid-param-${index}`} label={`Param ${index + 1}`} help={param?.description}>
                <select {...inputProps(`grid-param-${index}`)} value={row.param} onChange={(e) => editRow(index, { param: e.target.value })}>
                  <option value="">{params.length > 0 ? "—" : "— (pick methods first)"}</option>
                  {row.param !== "" && !param && <option value={row.param}>{row.param} (no picked method has it)</option>}
                  {params.map((p) => (
                    <option key={p.name} value={p.name} disabled={p.needsTokenBudget && !inTokens}>
                      {gridParamLabel(p, inTokens)}
                    </option>
                  ))}
                </select>
              </TopField>
              <TopField name={`grid.${index}`} label={`Values ${index + 1}`} error={error} help={param ? valuesHint(param) : "Comma-separated"}>
                <input
                  {...inputProps(`grid.${index}`, error)}
                  type="text"
                  spellCheck={false}
                  placeholder={param ? valuesHint(param) : "e.g. 4, 8, 16"}
                  value={row.values}
                  onChange={(e) => editRow(index, { values: e.target.value })}
                />
              </TopField>
            </div>
          );
        })}
      </Card>

      <Card title="Matched budget">
        <div className="form-grid">
          <TopField name="seeds" label="Seeds" error={byField.seeds} help="Every cell is trained once per seed (1 to 5 seeds)">
            <input
              {...inputProps("seeds", byField.seeds)}
              type="text"
              value={seedsText}
              onChange={(e) => {
                clearError("seeds");
                setSeedsText(e.target.value);
              }}
            />
          </TopField>
          <TopField
            name="budget-kind"
            label="Budget in"
            help="Training tokens keep the budget matched when the grid varies the batch size or max length"
          >
            <select {...inputProps("budget-kind")} value={budgetKind} onChange={(e) => setBudgetKind(e.target.value as "max_steps" | "train_tokens")}>
              <option value="max_steps">optimizer steps</option>
              <option value="train_tokens">training tokens</option>
            </select>
          </TopField>
          <TopField
            name={`budget.${budgetKind}`}
            label={inTokens ? "Tokens per run" : "Steps per run"}
            error={byField[`budget.${budgetKind}`]}
            help={
              inTokens
                ? "Each run's steps: tokens ÷ (batch size × accumulation × processes × max length), rounded up"
                : "Optimizer steps of every run"
            }
          >
            <input
              {...inputProps(`budget.${budgetKind}`, byField[`budget.${budgetKind}`])}
              type="text"
              inputMode="numeric"
              value={budget}
              onChange={(e) => {
                clearError(`budget.${budgetKind}`);
                setBudget(e.target.value);
              }}
            />
          </TopField>
          {shared.map((spec) => {
            const row = griddedRow(spec.name);
            return (
              <SharedParamField
                key={spec.name}
                spec={spec}
                value={row >= 0 ? "" : sharedValue(spec)}
                error={byField[`params.${spec.name}`]}
                variedInRow={row >= 0 ? row : undefined}
                onChange={(value) => {
                  clearError(`params.${spec.name}`);
                  setSharedEdited((current) => ({ ...current, [spec.name]: value }));
                }}
              />
            );
          })}
        </div>
      </Card>

      <div className="form-actions">
        <span className={runCount > MAX_RUNS ? "field-error" : "help"} data-testid="study-run-count">
          {runCount} run{runCount === 1 ? "" : "s"}
          {runCount > MAX_RUNS ? ` (at most ${MAX_RUNS})` : ""}
        </span>
        <button type="submit" className="primary" disabled={create.isPending || runCount > MAX_RUNS} data-testid="launch-study">
          {create.isPending ? "Launching…" : `Launch ${runCount} run${runCount === 1 ? "" : "s"}`}
        </button>
      </div>
    </form>
  );
}

/** How the error summary names a field: a grid row by its number, the rest by their path. */
function summaryLabel(path: string, rows: readonly GridRow[]): string {
  const row = /^grid\.(\d+)$/.exec(path);
  if (!row) return path;
  const param = rows[Number(row[1])]?.param;
  return `grid row ${Number(row[1]) + 1}${param ? ` (${param})` : ""}`;
}

/** A shared param's number input, titled, described and bounded by its schema as the launch form's are. */
function SharedParamField({
  spec,
  value,
  error,
  variedInRow,
  onChange,
}: {
  spec: ParamSpec;
  value: string;
  error?: string;
  /** The grid row that varies it: then it is not shared. */
  variedInRow?: number;
  onChange: (value: string) => void;
}) {
  const path = `params.${spec.name}`;
  const bounds = boundsText(spec);
  return (
    <div className={`field field-${spec.kind}`}>
      <label htmlFor={`field-${path}`} title={spec.name}>
        {spec.title}
      </label>
      <input
        {...inputProps(path, error)}
        type="number"
        inputMode={spec.kind === "integer" ? "numeric" : "decimal"}
        min={spec.min}
        max={spec.max}
        step={spec.kind === "integer" ? 1 : "any"}
        placeholder={variedInRow === undefined ? asText(spec.default) : "varied by the grid"}
        disabled={variedInRow !== undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
      {error && (
        <div className="field-error" id={`field-${path}-error`} data-testid={`field-error-${path}`}>
          {error}
        </div>
      )}
      <div className="help" id={`field-${path}-help`}>
        {variedInRow !== undefined ? `Varied by the grid (row ${variedInRow + 1}). ` : ""}
        {spec.description}
        {bounds && <span className="bounds"> ({bounds})</span>}
      </div>
    </div>
  );
}
