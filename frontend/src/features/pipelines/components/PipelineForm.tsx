// The pipeline form: a template, the base model and a name, then one fieldset per stage (its dataset, method and
// params, rendered from the method's schema as the run launch form renders them); the API checks every stage before
// anything is created, and a stage's refusal shows at its field.
import { useQueries, type UseQueryResult } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import type { FormEvent, MouseEvent } from "react";
import { Link, useNavigate } from "react-router";

import { ApiError } from "../../../api/client";
import type { Dataset, Schemas } from "../../../api/client";
import { Card, ErrorBox } from "../../../components/ui/ui";
import {
  BUNDLED_MODEL,
  SchemaForm,
  TopField,
  assignFieldErrors,
  describeSchema,
  inputProps,
  ModelOptions,
  UnavailableModels,
  paramDefaults,
  queueLabel,
  rewardRunField,
  rewardRunsQueryOptions,
  toFormValues,
  toParams,
  type Catalog,
  type FieldSpec,
  type FormValue,
  type FormValues,
  type JsonSchema,
  type Queue,
} from "../../launch";
import { useCreatePipeline, type PipelineTemplate } from "../api/queries";
import {
  datasetsForFormats,
  draftOf,
  methodsForObjective,
  rewardedByText,
  splitStageErrors,
  stageLabel,
  stagePayload,
  startsFromText,
  type StageDraft,
} from "../stages";

type Props = {
  catalog: Catalog;
  templates: readonly PipelineTemplate[];
  queues: readonly Queue[];
  projectId: number | undefined;
};

/** A stage's inputs as the form renders them: the objective's own params, then the method's. */
type StageForm = {
  draft: StageDraft;
  formats: string[];
  datasets: Dataset[];
  fields: FieldSpec[];
  defaults: Record<string, unknown>;
  values: FormValues;
};

const paramsPrefix = (position: number) => `stages.${position}.params`;

/** The reward runs of every objective whose model scores text, and the first failure to list them. */
function combineRewardRuns(results: UseQueryResult<Schemas["RunsPublic"]>[]) {
  return {
    runs: results.flatMap((result) => result.data?.data ?? []),
    error: results.find((result) => result.error)?.error?.message,
  };
}

export function PipelineForm({ catalog, templates, queues, projectId }: Props) {
  const navigate = useNavigate();
  const create = useCreatePipeline();
  const [templateName, setTemplateName] = useState(templates[0]?.name ?? "");
  const template = templates.find((t) => t.name === templateName);
  const [name, setName] = useState("");
  const [modelName, setModelName] = useState(() => {
    const available = catalog.models.filter((m) => m.available);
    return (available.find((m) => m.name === BUNDLED_MODEL) ?? available[0])?.name ?? "";
  });
  const [queueName, setQueueName] = useState(() => (queues.find((q) => q.default) ?? queues[0])?.name ?? "");
  const [drafts, setDrafts] = useState<StageDraft[]>(() => (template?.stages ?? []).map((s) => draftOf(s, catalog.datasets)));
  /** Params the user typed, by stage; kept across a change of method where the new method has the field. */
  const [edited, setEdited] = useState<Record<number, FormValues>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [topError, setTopError] = useState<string | null>(null);
  // After a refused launch focus lands on the summary of what to fix; each refusal counts.
  const [failedSubmits, setFailedSubmits] = useState(0);
  const summaryRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (failedSubmits > 0) summaryRef.current?.focus();
  }, [failedSubmits]);

  const model = catalog.models.find((m) => m.name === modelName);
  const unavailable = catalog.models.filter((m) => !m.available);
  const queue = queues.find((q) => q.name === queueName);
  const names = drafts.map((d) => d.name);

  // A stage of online RL that no earlier stage rewards is rewarded by an existing reward run, chosen by name.
  const choosesRewardRun = drafts.some(
    (draft) => !draft.rewardFrom && catalog.objectives.some((o) => o.name === draft.objective && o.reward_run_param !== null),
  );
  const rewardRuns = useQueries({
    queries: choosesRewardRun
      ? catalog.objectives.filter((o) => o.scores_text).map((o) => rewardRunsQueryOptions(projectId, o.name))
      : [],
    combine: combineRewardRuns,
  });

  const stages = useMemo<StageForm[]>(
    () =>
      drafts.map((draft, position) => {
        const objective = catalog.objectives.find((o) => o.name === draft.objective);
        const method = catalog.methods.find((m) => m.name === draft.method);
        const formats = template?.stages[position]?.dataset_formats ?? objective?.dataset_formats ?? [];
        const defaults = paramDefaults(method, model, objective);
        const preset = { ...defaults, ...template?.stages[position]?.params };
        const rewardParam = objective?.reward_run_param ?? null;
        const fields = [
          ...(objective ? describeSchema(objective.params_schema as JsonSchema) : []),
          ...(method ? describeSchema(method.params_schema as JsonSchema) : []),
        ]
          // The pipeline fills the reward run in from reward_from (and refuses it given both ways).
          .filter((field) => !(draft.rewardFrom && field.name === rewardParam))
          .map((field) =>
            field.name === rewardParam ? rewardRunField(field, rewardRuns.runs, preset[rewardParam], rewardRuns.error) : field,
          );
        const base = toFormValues(fields, preset);
        const kept = Object.fromEntries(Object.entries(edited[position] ?? {}).filter(([field]) => field in base));
        return { draft, formats, datasets: datasetsForFormats(catalog.datasets, formats), fields, defaults, values: { ...base, ...kept } };
      }),
    [drafts, catalog, template, model, edited, rewardRuns],
  );

  const known = [
    "name", "model", "queue",
    ...stages.flatMap((stage, position) => [
      `stages.${position}`, `stages.${position}.dataset_id`, `stages.${position}.method`,
      ...stage.fields.map((field) => `${paramsPrefix(position)}.${field.name}`),
    ]),
  ];
  const { byField, unmatched } = assignFieldErrors(errors, known);
  const { byStage, rest } = splitStageErrors(byField);

  const clearError = (path: string) =>
    setErrors((current) => {
      if (!(path in current)) return current;
      const { [path]: _removed, ...others } = current;
      return others;
    });

  const chooseTemplate = (next: string) => {
    const chosen = templates.find((t) => t.name === next);
    setTemplateName(next);
    setDrafts((chosen?.stages ?? []).map((s) => draftOf(s, catalog.datasets)));
    setEdited({});
    setErrors({});
    setTopError(null);
  };

  const updateDraft = (position: number, change: Partial<StageDraft>, path: string) => {
    clearError(path);
    setDrafts((current) => current.map((draft, i) => (i === position ? { ...draft, ...change } : draft)));
  };

  const editParam = (position: number, field: string, value: FormValue) => {
    clearError(`${paramsPrefix(position)}.${field}`);
    setEdited((current) => ({ ...current, [position]: { ...current[position], [field]: value } }));
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
    if (!name.trim()) local.name = "Give the pipeline a name";
    if (!modelName) local.model = "Choose a model";
    const payload = stages.map((stage, position) => {
      const { params, errors: paramErrors } = toParams(stage.fields, stage.values, stage.defaults, paramsPrefix(position));
      Object.assign(local, paramErrors);
      if (!stage.draft.datasetId) local[`stages.${position}.dataset_id`] = "Choose a dataset";
      return stagePayload(stage.draft, params);
    });
    setTopError(null);
    setErrors(local);
    if (Object.keys(local).length > 0) {
      setFailedSubmits((count) => count + 1);
      return;
    }
    create.mutate(
      {
        project_id: projectId ?? null,
        name: name.trim(),
        model: modelName,
        template: templateName || null,
        queue: queue?.name ?? null,
        stages: payload,
      },
      {
        onSuccess: (detail) => navigate(`/pipelines/${detail.id}`),
        onError: (error) => {
          const fieldErrors = error instanceof ApiError ? error.fieldErrors() : {};
          setErrors(fieldErrors);
          setTopError(Object.keys(fieldErrors).length > 0 ? null : error.message);
          setFailedSubmits((count) => count + 1);
        },
      },
    );
  };

  const labelOf = (path: string): string => {
    const match = /^stages\.(\d+)(?:\.params\.(.+)|\.(.+))?$/.exec(path);
    if (!match) return path;
    const position = Number(match[1]);
    const stage = stages[position];
    const where = stage ? stageLabel(position, stage.draft.name) : `Stage ${position + 1}`;
    const field = match[2] ? (stage?.fields.find((f) => f.name === match[2])?.title ?? match[2]) : match[3] === "dataset_id" ? "Dataset" : match[3];
    return field ? `${where}: ${field}` : where;
  };
  const summary = Object.entries(byField);

  return (
    <form className="pipeline-form" onSubmit={submit} noValidate>
      <div ref={summaryRef} tabIndex={-1} className="error-summary-anchor">
        {failedSubmits > 0 && summary.length > 0 && (
          <div className="error-box" role="alert">
            The pipeline was not launched: {summary.length === 1 ? "one field needs" : `${summary.length} fields need`} attention ·{" "}
            {summary.map(([path, message], index) => (
              <span key={path}>
                {index > 0 && " · "}
                <a href={`#field-${path}`} onClick={(event) => focusField(event, path)}>
                  {labelOf(path)}
                </a>
                : {message}
              </span>
            ))}
          </div>
        )}
        {topError && <ErrorBox error={topError} />}
        {unmatched.length > 0 && <ErrorBox error={unmatched.map(([path, message]) => `${path}: ${message}`).join(" · ")} />}
      </div>

      <fieldset className="card pipeline-templates">
        <legend>Template</legend>
        {templates.map((t) => (
          <label key={t.name} className={`pipeline-template${t.name === templateName ? " chosen" : ""}`}>
            <input type="radio" name="template" value={t.name} checked={t.name === templateName} onChange={() => chooseTemplate(t.name)} />
            <strong>{t.title}</strong>
            <span className="help">{t.description}</span>
          </label>
        ))}
      </fieldset>

      <Card title="Pipeline">
        <div className="form-grid">
          <TopField name="name" label="Pipeline name" error={rest.name} help="Each stage's run is named <pipeline> · <stage>">
            <input
              {...inputProps("name", rest.name)}
              type="text"
              value={name}
              onChange={(e) => {
                clearError("name");
                setName(e.target.value);
              }}
            />
          </TopField>
          <TopField
            name="model"
            label="Base model"
            error={rest.model}
            help={
              <>
                {model && <span>{model.description} The first stage trains it; the others start from a stage's weights.</span>}
                <UnavailableModels models={unavailable} />
              </>
            }
          >
            <select
              {...inputProps("model", rest.model)}
              value={modelName}
              onChange={(e) => {
                clearError("model");
                setModelName(e.target.value);
              }}
            >
              {!modelName && <option value="">—</option>}
              <ModelOptions models={catalog.models} />
            </select>
          </TopField>
          <TopField name="queue" label="Queue" error={rest.queue} help="Every stage's run waits on this queue for a worker.">
            <select
              {...inputProps("queue", rest.queue)}
              value={queue?.name ?? ""}
              onChange={(e) => {
                clearError("queue");
                setQueueName(e.target.value);
              }}
            >
              {queues.map((q) => (
                <option key={q.name} value={q.name}>
                  {queueLabel(q)}
                </option>
              ))}
            </select>
          </TopField>
        </div>
      </Card>

      <ol className="pipeline-stages-form">
        {stages.map((stage, position) => {
          const { draft } = stage;
          const errorsHere = byStage[position] ?? {};
          const stageError = errorsHere[`stages.${position}`];
          const datasetPath = `stages.${position}.dataset_id`;
          const methodPath = `stages.${position}.method`;
          const rewardedBy = rewardedByText(names, draft.rewardFrom);
          const objective = catalog.objectives.find((o) => o.name === draft.objective);
          const methods = methodsForObjective(catalog.methods, draft.objective);
          return (
            <li key={`${templateName}-${position}`}>
              <fieldset className="card pipeline-stage-fields" aria-describedby={`stage-${position}-from`}>
                <legend>{stageLabel(position, draft.name)}</legend>
                <p className="help" id={`stage-${position}-from`}>
                  {objective?.title ?? draft.objective}: {startsFromText(names, position, draft.startFrom)}
                  {rewardedBy && `, ${rewardedBy}`}
                </p>
                {stageError && (
                  <div className="field-error" id={`field-stages.${position}`} tabIndex={-1} role="alert">
                    {stageError}
                  </div>
                )}
                <div className="form-grid">
                  <TopField
                    name={datasetPath}
                    label="Dataset"
                    error={errorsHere[datasetPath]}
                    help={
                      <>
                        Formats: {stage.formats.join(", ")}. <Link to="/datasets">Upload a dataset</Link>
                      </>
                    }
                  >
                    <select
                      {...inputProps(datasetPath, errorsHere[datasetPath])}
                      value={draft.datasetId}
                      onChange={(e) => updateDraft(position, { datasetId: e.target.value }, datasetPath)}
                    >
                      {draft.datasetId === "" && <option value="">—</option>}
                      {stage.datasets.map((d) => (
                        <option key={d.id} value={String(d.id)}>
                          {d.name} · {d.format} · {d.row_count} rows{d.bundled ? " · bundled" : ""}
                        </option>
                      ))}
                    </select>
                  </TopField>
                  <TopField name={methodPath} label="Method" error={errorsHere[methodPath]} help={catalog.methods.find((m) => m.name === draft.method)?.description}>
                    <select
                      {...inputProps(methodPath, errorsHere[methodPath])}
                      value={draft.method}
                      onChange={(e) => updateDraft(position, { method: e.target.value }, methodPath)}
                    >
                      {!methods.some((m) => m.name === draft.method) && <option value={draft.method}>{draft.method || "—"}</option>}
                      {methods.map((m) => (
                        <option key={m.name} value={m.name}>
                          {m.title}
                          {m.requires_cuda ? " (CUDA GPU queues only)" : ""}
                        </option>
                      ))}
                    </select>
                  </TopField>
                </div>
                <details className="pipeline-stage-params" open>
                  <summary>Parameters · {objective?.title ?? draft.objective} · {catalog.methods.find((m) => m.name === draft.method)?.title ?? draft.method}</summary>
                  <SchemaForm
                    fields={stage.fields}
                    values={stage.values}
                    errors={errorsHere}
                    prefix={paramsPrefix(position)}
                    onChange={(field, value) => editParam(position, field, value)}
                  />
                </details>
              </fieldset>
            </li>
          );
        })}
      </ol>

      <div className="form-actions">
        <button type="submit" className="primary" disabled={create.isPending || stages.length === 0}>
          {create.isPending ? "Launching…" : `Launch pipeline (${stages.length} stage${stages.length === 1 ? "" : "s"})`}
        </button>
      </div>
    </form>
  );
}
