// The launch form: what to train (objective, method, model, dataset) and the method's parameters from its schema; on a
// run's trained weights when it starts from one.
import { useQueries } from "@tanstack/react-query";
import type { UseQueryResult } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import type { FormEvent, MouseEvent } from "react";
import { Link, useNavigate } from "react-router";

import { ApiError } from "../../api/client";
import type { Run, Schemas } from "../../api/client";
import { Card, ErrorBox } from "../../components/ui/ui";
import { useCreateRun } from "../runs";
import { datasetsFor, fitToObjective, initialChoice, methodsFor, paramDefaults, queueLabel } from "./launchChoice";
import type { Catalog, LaunchChoice, Queue } from "./launchChoice";
import { rewardRunsQueryOptions } from "./api/rewardRuns";
import { EstimatePanel } from "./EstimatePanel";
import { ModelOptions, TopField, UnavailableModels, inputProps } from "./FormField";
import { rewardRunField } from "./rewardRuns";
import { SchemaForm } from "./SchemaForm";
import { assignFieldErrors, describeSchema, toFormValues, toParams } from "./schemaFields";
import type { FormValue, FormValues, JsonSchema } from "./schemaFields";

const TOP_FIELDS = ["name", "objective", "method", "model", "dataset", "queue"];

/** The reward runs of every objective whose model scores text, and the first failure to list them. */
function combineRewardRuns(results: UseQueryResult<Schemas["RunsPublic"]>[]) {
  return {
    runs: results.flatMap((result) => result.data?.data ?? []),
    error: results.find((result) => result.error)?.error?.message,
  };
}

export function LaunchForm({
  catalog,
  queues,
  source,
  baseRun,
  projectId,
}: {
  catalog: Catalog;
  /** The training queues the server declares (GET /queues): the only ones a run may name. */
  queues: Queue[];
  source?: Run;
  /** The run whose trained weights the new run starts from: its base model is the only one that fits them. */
  baseRun?: Run;
  projectId: number | undefined;
}) {
  const navigate = useNavigate();
  const create = useCreateRun();
  const [choice, setChoice] = useState<LaunchChoice>(() => initialChoice(catalog, source, baseRun));
  const [seedParams, setSeedParams] = useState(choice.seedParams);
  /** Params the user typed; they survive a change of method where the new method has the same field. */
  const [edited, setEdited] = useState<FormValues>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  // After a refused launch focus lands on the summary of what to fix (it was left on <body>): each failure counts, so
  // the same refusal twice focuses it again.
  const [failedSubmits, setFailedSubmits] = useState(0);
  const summaryRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (failedSubmits > 0) summaryRef.current?.focus();
  }, [failedSubmits]);
  const focusField = (event: MouseEvent, path: string) => {
    const field = document.getElementById(`field-${path}`);
    if (!field) return;
    event.preventDefault();
    field.focus();
  };
  const [topError, setTopError] = useState<string | null>(null);

  const objective = catalog.objectives.find((o) => o.name === choice.objective);
  const methods = methodsFor(catalog, choice.objective);
  const method = catalog.methods.find((m) => m.name === choice.method);
  const datasets = datasetsFor(catalog, choice.objective);
  const model = catalog.models.find((m) => m.name === choice.model);
  // Which models to fetch is no question when the model is fixed by the run started from.
  const unavailable = baseRun ? [] : catalog.models.filter((m) => !m.available);
  // A clone whose source's queue is no longer declared goes to the default one.
  const queue = queues.find((q) => q.name === choice.queue) ?? queues.find((q) => q.default);

  // Choosing the tiny model brings its demo defaults; any other model, the method's own.
  const defaults = useMemo(() => paramDefaults(method, model, objective), [method, model, objective]);
  // An online RL objective is rewarded by a run whose model scores text: offered by name, not by an id to know.
  const rewardParam = objective?.reward_run_param ?? null;
  const rewardRuns = useQueries({
    queries: rewardParam
      ? catalog.objectives.filter((o) => o.scores_text).map((o) => rewardRunsQueryOptions(projectId, o.name))
      : [],
    combine: combineRewardRuns,
  });
  const rewardPreset = rewardParam ? { ...defaults, ...seedParams }[rewardParam] : undefined;
  // The objective's own settings (DPO's beta, SFT's packing) come first, then the shared and the method's.
  const fields = useMemo(
    () =>
      [
        ...(objective ? describeSchema(objective.params_schema as JsonSchema) : []),
        ...(method ? describeSchema(method.params_schema as JsonSchema) : []),
      ].map((field) =>
        field.name === rewardParam ? rewardRunField(field, rewardRuns.runs, rewardPreset, rewardRuns.error) : field,
      ),
    [objective, method, rewardParam, rewardRuns, rewardPreset],
  );
  const values = useMemo(() => {
    const base = toFormValues(fields, { ...defaults, ...seedParams });
    const kept = Object.fromEntries(Object.entries(edited).filter(([name]) => name in base));
    return { ...base, ...kept };
  }, [fields, defaults, seedParams, edited]);

  // The estimate follows the form as typed; it waits while a field does not parse.
  const typedParams = useMemo(() => (method ? toParams(fields, values, defaults) : null), [fields, values, method, defaults]);

  const known = [...TOP_FIELDS, ...(baseRun ? ["base_run"] : []), ...fields.map((f) => `params.${f.name}`)];
  const { byField, unmatched } = assignFieldErrors(errors, known);

  const clearError = (path: string) =>
    setErrors((current) => {
      if (!(path in current)) return current;
      const { [path]: _removed, ...rest } = current;
      return rest;
    });

  const update = (field: keyof LaunchChoice, value: string) => {
    clearError(field);
    setChoice((current) => (field === "objective" ? fitToObjective(catalog, current, value) : { ...current, [field]: value }));
  };

  const editParam = (name: string, value: FormValue) => {
    clearError(`params.${name}`);
    setEdited((current) => ({ ...current, [name]: value }));
  };

  const resetParams = () => {
    setEdited({});
    setSeedParams({});
    setErrors((current) => Object.fromEntries(Object.entries(current).filter(([path]) => !path.startsWith("params."))));
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending || !method) return;
    const { params, errors: local } = toParams(fields, values, defaults);
    if (!choice.model) local.model = "Choose a model";
    if (!choice.dataset) local.dataset = "Choose a dataset";
    setTopError(null);
    setErrors(local);
    if (Object.keys(local).length > 0) {
      setFailedSubmits((count) => count + 1);
      return;
    }
    create.mutate(
      {
        name: choice.name.trim() || null,
        objective: choice.objective,
        method: choice.method,
        // From a run, the server takes its base model.
        ...(baseRun ? { base_run: baseRun.id } : { model: choice.model }),
        dataset: Number(choice.dataset),
        queue: queue?.name ?? null,
        params,
        external: false,
        project_id: projectId ?? null,
      },
      {
        onSuccess: (run) => navigate(`/runs/${run.id}`),
        onError: (error) => {
          const fieldErrors = error instanceof ApiError ? error.fieldErrors() : {};
          setErrors(fieldErrors);
          setTopError(Object.keys(fieldErrors).length > 0 ? null : error.message);
          setFailedSubmits((count) => count + 1);
        },
      },
    );
  };

  const modelOptions = model || !choice.model ? catalog.models : [...catalog.models, { name: choice.model, title: choice.model, available: true }];
  const sourceDatasetMissing = choice.dataset !== "" && !datasets.some((d) => String(d.id) === choice.dataset);

  return (
    <form onSubmit={submit} noValidate className="launch-form">
      <div ref={summaryRef} tabIndex={-1} className="error-summary-anchor">
        {failedSubmits > 0 && Object.keys(errors).length > 0 && (
          <div className="error-box" role="alert" data-testid="launch-error-summary">
            The run was not launched: {Object.keys(errors).length === 1 ? "one field needs" : `${Object.keys(errors).length} fields need`} attention ·{" "}
            {Object.entries(errors).map(([path, message], index) => (
              <span key={path}>
                {index > 0 && " · "}
                <a href={`#field-${path}`} onClick={(event) => focusField(event, path)}>
                  {path}
                </a>
                : {message}
              </span>
            ))}
          </div>
        )}
        {topError && <ErrorBox error={topError} />}
      </div>
      {unmatched.length > 0 && <ErrorBox error={unmatched.map(([path, message]) => `${path}: ${message}`).join(" · ")} />}

      {baseRun && (
        // The target of the error summary's base_run link.
        <div className="notice base-run-notice" id="field-base_run" tabIndex={-1} data-testid="base-run-notice">
          Starts from <Link to={`/runs/${baseRun.id}`}>run #{baseRun.id} {baseRun.name}</Link> ({baseRun.objective} ·{" "}
          {baseRun.method}, its trained weights and tokenizer)
          {byField.base_run && (
            <div className="field-error" data-testid="field-error-base_run">
              {byField.base_run}
            </div>
          )}
        </div>
      )}

      <Card title="What to train">
        <div className="form-grid">
          <TopField name="name" label="Name" error={byField.name} help="Empty: <method>-<model>-<n>">
            <input
              {...inputProps("name", byField.name)}
              type="text"
              value={choice.name}
              placeholder="auto"
              onChange={(e) => update("name", e.target.value)}
            />
          </TopField>
          <TopField name="objective" label="Objective" error={byField.objective} help={objective?.description}>
            <select {...inputProps("objective", byField.objective)} value={choice.objective} onChange={(e) => update("objective", e.target.value)}>
              {catalog.objectives.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.title}
                </option>
              ))}
            </select>
          </TopField>
          <TopField name="method" label="Method" error={byField.method} help={method?.description}>
            <select {...inputProps("method", byField.method)} value={choice.method} onChange={(e) => update("method", e.target.value)}>
              {!method && <option value={choice.method}>{choice.method || "—"}</option>}
              {methods.map((m) => (
                <option key={m.name} value={m.name}>
                  {m.title}
                  {m.requires_cuda ? " (CUDA GPU queues only)" : ""}
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
                    Fixed: run #{baseRun.id} trained from this model, and its weights fit no other.{" "}
                  </span>
                )}
                {model && <span>{model.description}</span>}
                <UnavailableModels models={unavailable} />
              </>
            }
          >
            <select
              {...inputProps("model", byField.model)}
              value={choice.model}
              disabled={baseRun !== undefined}
              onChange={(e) => update("model", e.target.value)}
            >
              {!choice.model && <option value="">—</option>}
              <ModelOptions models={modelOptions} />
            </select>
          </TopField>
          <TopField
            name="dataset"
            label="Dataset"
            error={byField.dataset}
            help={
              <>
                Formats: {objective?.dataset_formats.join(", ")}. <Link to="/datasets">Upload a dataset</Link>
              </>
            }
          >
            <select {...inputProps("dataset", byField.dataset)} value={choice.dataset} onChange={(e) => update("dataset", e.target.value)}>
              {(choice.dataset === "" || sourceDatasetMissing) && <option value={choice.dataset}>{choice.dataset ? `#${choice.dataset}` : "—"}</option>}
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
            <select {...inputProps("queue", byField.queue)} value={queue?.name ?? ""} onChange={(e) => update("queue", e.target.value)}>
              {queues.map((q) => (
                <option key={q.name} value={q.name}>
                  {queueLabel(q)}
                </option>
              ))}
            </select>
          </TopField>
        </div>
      </Card>

      {method && (
        <Card
          title={`Parameters · ${objective ? `${objective.title} · ` : ""}${method.title}`}
          actions={
            <button type="button" onClick={resetParams}>
              Reset to defaults
            </button>
          }
        >
          <SchemaForm fields={fields} values={values} errors={byField} onChange={editParam} />
        </Card>
      )}

      {method && choice.model && typedParams && Object.keys(typedParams.errors).length === 0 && (
        <EstimatePanel
          request={{
            model: choice.model,
            objective: choice.objective,
            method: choice.method,
            params: typedParams.params,
            queue: queue?.name ?? null,
            dataset: choice.dataset ? Number(choice.dataset) : null,
          }}
        />
      )}

      <div className="form-actions">
        <button type="submit" className="primary" disabled={create.isPending || !method}>
          Launch run
        </button>
        {create.isPending && <span className="help">Launching…</span>}
      </div>
    </form>
  );
}
