// One prompt (or a row of the runs' dataset) to the base model and each run, their completions side by side, filling
// token by token from the request's event stream; with a reward run, each completion (and one of your own) scored.
import { useQueries, useQuery } from "@tanstack/react-query";
import { useEffect, useId, useState, type FormEvent } from "react";

import { ApiError, type Run } from "../../../api/client";
import { Card, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { rewardRunLabel, rewardRunsQueryOptions } from "../../launch";
import { methodsQueryOptions } from "../../runs";
import { useAskPlayground, type CompletionSlot, type PlaygroundAnswer, type PlaygroundRequest } from "../api/queries";
import { applyEvent, initialSlots, promptText, scoreLabel, slotStatusLabel, STREAM_EVENTS, type SlotState } from "../stream";

type Sampling = NonNullable<PlaygroundRequest["sampling"]>;

const DEFAULT_SAMPLING: Sampling = {
  max_new_tokens: 64,
  do_sample: false,
  temperature: 1,
  top_p: 1,
  top_k: 50,
  seed: 0,
  ignore_eos: false,
};

type RunDataset = { id: number; name: string; rows: number };

function runDataset(run: Run): RunDataset | null {
  const dataset = (run.config as { dataset?: Partial<RunDataset> } | undefined)?.dataset;
  return dataset && typeof dataset.id === "number" ? { id: dataset.id, name: dataset.name ?? `#${dataset.id}`, rows: dataset.rows ?? 0 } : null;
}

export type PlaygroundPanelProps = {
  projectId: number;
  /**
   * Succeeded runs of one base model (1–6); each that generates gets a column, and the base one more. A reward run
   * among them (its model scores text) is the one that scores the completions.
   */
  runs: Run[];
};

export function PlaygroundPanel({ projectId, runs }: PlaygroundPanelProps) {
  const ask = useAskPlayground();
  const scoring = new Set((useQuery(methodsQueryOptions()).data?.objectives ?? []).filter((o) => o.scores_text).map((o) => o.name));
  const generating = runs.filter((run) => !scoring.has(run.objective));
  const rewardRuns = useQueries({ queries: [...scoring].map((objective) => rewardRunsQueryOptions(projectId, objective)) })
    .flatMap((query) => query.data?.data ?? [])
    .sort((a, b) => b.id - a.id);
  // Until one is picked, a reward run among the panel's runs (a reward run's own page) scores.
  const [pickedRewardRun, setRewardRun] = useState<number | null | undefined>(undefined);
  const rewardRun = pickedRewardRun === undefined ? (runs.find((run) => scoring.has(run.objective))?.id ?? null) : pickedRewardRun;
  const [completion, setCompletion] = useState("");
  const dataset = generating.map(runDataset).find((d) => d !== null) ?? null;
  const [mode, setMode] = useState<"prompt" | "row">("prompt");
  const [prompt, setPrompt] = useState("");
  const [row, setRow] = useState(0);
  const [includeBase, setIncludeBase] = useState(true);
  const [sampling, setSampling] = useState<Sampling>(DEFAULT_SAMPLING);
  const [answer, setAnswer] = useState<PlaygroundAnswer | null>(null);
  const { slots, ended } = useCompletionStream(answer);

  const fieldErrors = ask.error instanceof ApiError ? ask.error.fieldErrors() : {};
  const set = <K extends keyof Sampling>(key: K, value: Sampling[K]) =>
    setSampling((old) => ({ ...old, [key]: value }));

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body: PlaygroundRequest = {
      project_id: projectId,
      run_ids: generating.map((run) => run.id),
      include_base: includeBase && generating.length > 0,
      sampling,
      ...(rewardRun !== null ? { reward_run: rewardRun } : {}),
      ...(rewardRun !== null && completion.trim() ? { completion } : {}),
      ...(mode === "row" && dataset ? { dataset_row: { dataset_id: dataset.id, row } } : { prompt }),
    };
    ask.mutate(body, { onSuccess: setAnswer });
  };

  return (
    <Card title="Playground" testId="playground">
      <form className="playground-form" onSubmit={submit}>
        {/* A choice only where the runs' dataset offers rows to prompt with. */}
        {dataset && (
          <div className="playground-source">
            <label>
              <input type="radio" name="playground-mode" checked={mode === "prompt"} onChange={() => setMode("prompt")} />{" "}
              Prompt
            </label>
            <label>
              <input type="radio" name="playground-mode" checked={mode === "row"} onChange={() => setMode("row")} />{" "}
              A row of {dataset.name}
            </label>
          </div>
        )}
        {mode === "prompt" ? (
          <Field name="prompt" label="Prompt" error={fieldErrors.prompt}>
            <textarea
              {...fieldProps("prompt", fieldErrors.prompt)}
              data-testid="playground-prompt"
              rows={3}
              value={prompt}
              onChange={(e) => setPrompt(e.target.value)}
              placeholder="Ask the models something"
            />
          </Field>
        ) : (
          <Field name="dataset_row.row" label={`Row (0–${Math.max(0, (dataset?.rows ?? 1) - 1)})`} error={fieldErrors["dataset_row.row"]}>
            <input
              {...fieldProps("dataset_row.row", fieldErrors["dataset_row.row"])}
              type="number"
              min={0}
              value={row}
              onChange={(e) => setRow(Number(e.target.value))}
            />
          </Field>
        )}
        {generating.length > 0 && <div className="playground-sampling">
          <Field name="sampling.max_new_tokens" label="Max new tokens" error={fieldErrors["sampling.max_new_tokens"]}>
            <input
              {...fieldProps("sampling.max_new_tokens", fieldErrors["sampling.max_new_tokens"])}
              type="number"
              min={1}
              max={512}
              value={sampling.max_new_tokens}
              onChange={(e) => set("max_new_tokens", Number(e.target.value))}
            />
          </Field>
          <Field name="sampling.do_sample" label="Sample">
            <input
              {...fieldProps("sampling.do_sample")}
              type="checkbox"
              checked={sampling.do_sample}
              onChange={(e) => set("do_sample", e.target.checked)}
            />
          </Field>
          {(["temperature", "top_p", "top_k", "seed"] as const).map((key) => (
            <Field key={key} name={`sampling.${key}`} label={key.replace("_", "-")} error={fieldErrors[`sampling.${key}`]}>
              <input
                {...fieldProps(`sampling.${key}`, fieldErrors[`sampling.${key}`])}
                type="number"
                step={key === "temperature" || key === "top_p" ? 0.05 : 1}
                disabled={key !== "seed" && !sampling.do_sample}
                value={sampling[key]}
                onChange={(e) => set(key, Number(e.target.value))}
              />
            </Field>
          ))}
          <Field name="sampling.ignore_eos" label="Past the end token">
            <input
              {...fieldProps("sampling.ignore_eos")}
              type="checkbox"
              checked={sampling.ignore_eos}
              onChange={(e) => set("ignore_eos", e.target.checked)}
            />
          </Field>
          <Field name="include_base" label="Base model too">
            <input
              {...fieldProps("include_base")}
              type="checkbox"
              checked={includeBase}
              onChange={(e) => setIncludeBase(e.target.checked)}
            />
          </Field>
        </div>}
        <Field name="reward_run" label="Score with reward model" error={fieldErrors.reward_run}
          help="A succeeded reward run of this project scores the prompt with each completion (higher: preferred)">
          <select
            {...fieldProps("reward_run", fieldErrors.reward_run)}
            value={rewardRun ?? ""}
            onChange={(e) => setRewardRun(e.target.value ? Number(e.target.value) : null)}
          >
            {/* Without a model to generate, there is nothing to do but score. */}
            {(generating.length > 0 || rewardRun === null) && <option value="">None</option>}
            {rewardRuns.map((run) => (
              <option key={run.id} value={run.id}>
                {rewardRunLabel(run)}
              </option>
            ))}
            {rewardRun !== null && !rewardRuns.some((run) => run.id === rewardRun) && <option value={rewardRun}>Run #{rewardRun}</option>}
          </select>
        </Field>
        {rewardRun !== null && (
          <Field name="completion" label={generating.length ? "Your completion (scored too)" : "Your completion"} error={fieldErrors.completion}>
            <textarea
              {...fieldProps("completion", fieldErrors.completion)}
              rows={2}
              required={generating.length === 0}
              value={completion}
              onChange={(e) => setCompletion(e.target.value)}
              placeholder={generating.length ? "An answer of your own, to score beside the models'" : "An answer to the prompt, for the reward model to score"}
            />
          </Field>
        )}
        <button type="submit" className="primary" disabled={ask.isPending} data-testid="playground-generate">
          {ask.isPending ? "Sending…" : generating.length ? "Generate" : "Score"}
        </button>
        {ask.error && Object.keys(fieldErrors).length === 0 && <ErrorBox error={ask.error} testId="playground-error" />}
      </form>
      {answer && (
        <>
          {mode === "row" && (
            <div className="playground-row-prompt" data-testid="playground-row-prompt">
              <strong>Prompt of row {row}</strong>
              <pre>{promptText(answer.prompt)}</pre>
            </div>
          )}
          {answer.expected != null && (
            <p className="help" data-testid="playground-expected">
              Expected: {answer.expected}
            </p>
          )}
          {answer.scored_by && <p className="help">Scored by {answer.scored_by}</p>}
          <div className="playground-columns">
            {answer.slots.map((slot) => (
              <CompletionColumn key={slot.slot} slot={slot} state={slots[slot.slot]} scoring={answer.scored_by != null && !ended} />
            ))}
          </div>
        </>
      )}
    </Card>
  );
}

/**
 * A region named by its model, so that each completion is found (and read) under the model that wrote it. While the
 * stream is open and a reward run scores, a completion written (or given) and not yet scored says so.
 */
function CompletionColumn({ slot, state, scoring }: { slot: CompletionSlot; state?: SlotState; scoring: boolean }) {
  const labelId = useId();
  const given = slot.kind === "given";
  const failed = state?.status === "failed";
  const score = (state && scoreLabel(state)) ?? (scoring && !failed && (given || state?.status === "done") ? "Scoring…" : null);
  return (
    <section className="playground-column" data-status={state?.status ?? "waiting"} aria-labelledby={labelId}>
      <h3 id={labelId} title={given ? "Your text, scored only" : slot.chat_template ? "Prompted through the chat template the run trained with" : "Prompted with the raw text"}>
        {slot.label}
      </h3>
      <pre className="playground-completion">
        {state?.text}
      </pre>
      {(!given || failed) && <div className={failed ? "field-error" : "help"}>{state ? slotStatusLabel(state) : "Waiting…"}</div>}
      {score && <div className={state?.scoreError ? "field-error" : state?.score != null ? "playground-score" : "help"}>{score}</div>}
    </section>
  );
}

/** Each slot's state, following the answer's event stream (from its first event, whenever it is opened), and whether
 * the stream has ended. */
function useCompletionStream(answer: PlaygroundAnswer | null): { slots: SlotState[]; ended: boolean } {
  const [slots, setSlots] = useState<SlotState[]>([]);
  const [ended, setEnded] = useState(false);
  useEffect(() => {
    if (!answer) return;
    setSlots(initialSlots(answer.slots.length));
    setEnded(false);
    const source = new EventSource(answer.events_url);
    for (const name of STREAM_EVENTS) {
      source.addEventListener(name, (event) => {
        const data = JSON.parse((event as MessageEvent<string>).data) as Parameters<typeof applyEvent>[2];
        setSlots((old) => applyEvent(old, name, data));
        if (name === "end") {
          source.close();
          setEnded(true);
        }
      });
    }
    return () => source.close();
  }, [answer]);
  return { slots, ended };
}
