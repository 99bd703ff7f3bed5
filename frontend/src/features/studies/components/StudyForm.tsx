// The study form: one base model and dataset, several methods, an optional grid, seeds and one budget for all.
import { useMemo, useState } from "react";
import type { FormEvent } from "react";
import { useNavigate } from "react-router";

import { ApiError } from "../../../api/client";
import type { Dataset, Schemas } from "../../../api/client";
import { Card, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { useCreateStudy } from "../api/queries";
import { countRuns, gridOf, parseSeeds, type GridRow } from "../plan";

export type StudyCatalog = {
  objectives: Schemas["ObjectivePublic"][];
  methods: Schemas["MethodPublic"][];
  models: Schemas["ModelPublic"][];
  datasets: Dataset[];
};

const MAX_RUNS = 48;
const GRID_ROWS = 3;

function paramNames(method: Schemas["MethodPublic"] | undefined): string[] {
  const schema = method?.params_schema as { properties?: Record<string, unknown> } | undefined;
  return Object.keys(schema?.properties ?? {});
}

export function StudyForm({ catalog, projectId }: { catalog: StudyCatalog; projectId: number | undefined }) {
  const navigate = useNavigate();
  const create = useCreateStudy();
  const available = catalog.models.filter((m) => m.available);
  const [name, setName] = useState("");
  const [objective, setObjective] = useState("sft");
  const [model, setModel] = useState(available[0]?.name ?? "");
  const formats = catalog.objectives.find((o) => o.name === objective)?.dataset_formats ?? [];
  const datasets = catalog.datasets.filter((d) => formats.includes(d.format));
  const [datasetId, setDatasetId] = useState<number | undefined>(datasets[0]?.id);
  const methods = catalog.methods.filter((m) => m.objectives.includes(objective) && !m.requires_cuda);
  const [picked, setPicked] = useState<string[]>([]);
  const [grid, setGrid] = useState<GridRow[]>(Array.from({ length: GRID_ROWS }, () => ({ param: "", values: "" })));
  const [seedsText, setSeedsText] = useState("42");
  const [budgetKind, setBudgetKind] = useState<"max_steps" | "train_tokens">("max_steps");
  const [budget, setBudget] = useState("20");
  const [maxLength, setMaxLength] = useState("128");
  const [batchSize, setBatchSize] = useState("4");
  const [evalSplit, setEvalSplit] = useState("0.2");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [topError, setTopError] = useState<unknown>(null);

  const seeds = parseSeeds(seedsText);
  const gridValues = gridOf(grid);
  const runCount = useMemo(
    () =>
      countRuns(picked, gridValues, seeds?.length ?? 0, (methodName) =>
        paramNames(catalog.methods.find((m) => m.name === methodName)),
      ),
    [picked, gridValues, seeds, catalog.methods],
  );

  const toggle = (method: string) =>
    setPicked((current) => (current.includes(method) ? current.filter((m) => m !== method) : [...current, method]));

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const local: Record<string, string> = {};
    if (!name.trim()) local.name = "Give the study a name";
    if (picked.length === 0) local.methods = "Pick at least one method";
    if (seeds === null || seeds.length === 0) local.seeds = "Whole numbers separated by commas, e.g. 1, 2, 3";
    const budgetValue = Number(budget);
    if (!Number.isInteger(budgetValue) || budgetValue < 1) local[`budget.${budgetKind}`] = "A whole number of at least 1";
    if (datasetId === undefined) local.dataset_id = "Pick a dataset";
    setErrors(local);
    if (Object.keys(local).length > 0 || seeds === null || datasetId === undefined) return;
    setTopError(null);
    create.mutate(
      {
        project_id: projectId ?? null,
        name: name.trim(),
        model,
        dataset_id: datasetId,
        objective,
        methods: picked,
        grid: gridValues,
        seeds,
        budget: budgetKind === "max_steps" ? { max_steps: budgetValue } : { train_tokens: budgetValue },
        params: {
          max_length: Number(maxLength),
          per_device_train_batch_size: Number(batchSize),
          eval_split: Number(evalSplit),
          ...Object.fromEntries(Object.keys(gridValues).map((p) => [p, undefined])),
        },
      },
      {
        onSuccess: (detail) => navigate(`/studies/${detail.study.id}`),
        onError: (error) => {
          const fields = error instanceof ApiError ? error.fieldErrors() : {};
          const byField: Record<string, string> = {};
          for (const [field, message] of Object.entries(fields)) {
            // A grid param's error shows at its row; other fields at their own input.
            const gridRow = grid.findIndex((row) => `grid.${row.param.trim()}` === field);
            byField[gridRow >= 0 ? `grid.${gridRow}` : field] = error instanceof ApiError ? error.message : message;
          }
          setErrors(byField);
          const shown = Object.keys(byField).some((field) => FORM_FIELDS.has(field.replace(/\.\d+$/, "")));
          if (!shown) setTopError(error);
        },
      },
    );
  };

  return (
    <form className="study-form" onSubmit={submit} data-testid="study-form" noValidate>
      <Card title="What to compare">
        <Field name="name" label="Study name" error={errors.name}>
          <input {...fieldProps("name", errors.name)} value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field name="objective" label="Objective" error={errors.objective}>
          <select {...fieldProps("objective", errors.objective)} value={objective} onChange={(e) => setObjective(e.target.value)}>
            {catalog.objectives.map((o) => (
              <option key={o.name} value={o.name}>{o.name}</option>
            ))}
          </select>
        </Field>
        <Field name="model" label="Base model" error={errors.model}>
          <select {...fieldProps("model", errors.model)} value={model} onChange={(e) => setModel(e.target.value)}>
            {available.map((m) => (
              <option key={m.name} value={m.name}>{m.name}</option>
            ))}
          </select>
        </Field>
        <Field name="dataset_id" label="Dataset" error={errors.dataset_id}>
          <select
            {...fieldProps("dataset_id", errors.dataset_id)}
            value={datasetId ?? ""}
            onChange={(e) => setDatasetId(Number(e.target.value))}
          >
            {datasets.map((d) => (
              <option key={d.id} value={d.id}>{d.name} ({d.format}, {d.row_count} rows)</option>
            ))}
          </select>
        </Field>
        <fieldset className="field" data-testid="study-methods">
          <legend>Methods</legend>
          {methods.map((m) => (
            <label key={m.name} className="checkbox-label">
              <input type="checkbox" name="methods" value={m.name} checked={picked.includes(m.name)} onChange={() => toggle(m.name)} />
              {m.title ?? m.name}
            </label>
          ))}
          {errors.methods && (
            <div className="field-error" data-testid="field-error-methods">{errors.methods}</div>
          )}
        </fieldset>
      </Card>
      <Card title="Grid (optional)">
        <p className="help">Up to three params, each with comma-separated values (e.g. r: 4, 8, 16). A method gets the cells of the params it has.</p>
        {grid.map((row, index) => (
          <div className="grid-row" key={index}>
            <Field name={`grid-param-${index}`} label={`Param ${index + 1}`}>
              <input
                {...fieldProps(`grid-param-${index}`)}
                placeholder="e.g. learning_rate"
                value={row.param}
                onChange={(e) => setGrid((rows) => rows.map((r, i) => (i === index ? { ...r, param: e.target.value } : r)))}
              />
            </Field>
            <Field name={`grid.${index}`} label="Values" error={errors[`grid.${index}`]}>
              <input
                {...fieldProps(`grid.${index}`, errors[`grid.${index}`])}
                placeholder="e.g. 1e-4, 3e-4"
                value={row.values}
                onChange={(e) => setGrid((rows) => rows.map((r, i) => (i === index ? { ...r, values: e.target.value } : r)))}
              />
            </Field>
          </div>
        ))}
      </Card>
      <Card title="Matched budget">
        <Field name="seeds" label="Seeds" error={errors.seeds} help="Every cell is trained once per seed (1 to 5 seeds)">
          <input {...fieldProps("seeds", errors.seeds)} value={seedsText} onChange={(e) => setSeedsText(e.target.value)} />
        </Field>
        <Field name="budget-kind" label="Budget in">
          <select {...fieldProps("budget-kind")} value={budgetKind} onChange={(e) => setBudgetKind(e.target.value as "max_steps" | "train_tokens")}>
            <option value="max_steps">optimizer steps</option>
            <option value="train_tokens">training tokens</option>
          </select>
        </Field>
        <Field name={`budget.${budgetKind}`} label={budgetKind === "max_steps" ? "Steps per run" : "Tokens per run"} error={errors[`budget.${budgetKind}`]}>
          <input {...fieldProps(`budget.${budgetKind}`, errors[`budget.${budgetKind}`])} value={budget} onChange={(e) => setBudget(e.target.value)} inputMode="numeric" />
        </Field>
        <Field name="params.max_length" label="Max length (tokens)" error={errors["params.max_length"]}>
          <input {...fieldProps("params.max_length", errors["params.max_length"])} value={maxLength} onChange={(e) => setMaxLength(e.target.value)} inputMode="numeric" />
        </Field>
        <Field name="params.per_device_train_batch_size" label="Batch size" error={errors["params.per_device_train_batch_size"]}>
          <input {...fieldProps("params.per_device_train_batch_size", errors["params.per_device_train_batch_size"])} value={batchSize} onChange={(e) => setBatchSize(e.target.value)} inputMode="numeric" />
        </Field>
        <Field name="params.eval_split" label="Eval fraction" error={errors["params.eval_split"]} help="The same held-out rows for every run (the dataset's split seed)">
          <input {...fieldProps("params.eval_split", errors["params.eval_split"])} value={evalSplit} onChange={(e) => setEvalSplit(e.target.value)} inputMode="decimal" />
        </Field>
      </Card>
      {topError !== null && <ErrorBox error={topError} testId="study-form-error" />}
      <div className="form-actions">
        <span className={runCount > MAX_RUNS ? "field-error" : "help"} data-testid="study-run-count">
          {runCount} run{runCount === 1 ? "" : "s"}{runCount > MAX_RUNS ? ` (at most ${MAX_RUNS})` : ""}
        </span>
        <button type="submit" className="primary" disabled={create.isPending || runCount > MAX_RUNS} data-testid="launch-study">
          {create.isPending ? "Launching…" : `Launch ${runCount} run${runCount === 1 ? "" : "s"}`}
        </button>
      </div>
    </form>
  );
}

const FORM_FIELDS = new Set([
  "name", "objective", "model", "dataset_id", "methods", "grid", "seeds", "budget.max_steps", "budget.train_tokens",
  "params.max_length", "params.per_device_train_batch_size", "params.eval_split",
]);
