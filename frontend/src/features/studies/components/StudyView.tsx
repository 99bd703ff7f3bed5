// A study's page: its runs, overlaid curves per metric (one colour per cell; a cell of several seeds as a bold mean
// in the band of their spread, over a thin line per seed), the fair cost table and Pareto charts. The study page and
// a shared study show the same view; a shared one is read-only.
import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ErrorBox, Loading, StatusBadge } from "../../../components/ui/ui";
import { ComparedMetricCharts, seriesByKey, useComparedMetrics, type RunSeriesSet } from "../../metrics";
import { ShareDialog } from "../../shares";
import { studyQueryOptions, useCloneStudy, useDeleteStudy, useExtendStudy, type StudyDetail } from "../api/queries";
import { type ParetoPoint } from "../pareto";
import { parseList, parseSeeds } from "../plan";
import { studySeriesSets } from "../seeds";
import { ParetoChart } from "./ParetoChart";
import { StudyCostTable } from "./StudyCostTable";

const MAX_POINTS = 1000;
const LIVE_REFRESH_MS = 5_000;
const FINISHED = new Set(["succeeded", "failed", "canceled"]);
const STUDY_CHARTS_DRAWN = { mark: "tunelab:study-charts-drawn", measure: "tunelab:metrics-to-study-charts" };

export function cellColor(index: number): string {
  const hue = Math.round((index * 137.508 + 210) % 360);
  return `hsl(${hue} 65% 42%)`;
}

type StudyViewProps = {
  studyId: number;
  /** A shared study: no links into the app and no actions. */
  readOnly?: boolean;
  /** The caller may change the study (an editor of its project): Share, Clone, Extend and Delete. */
  canChange?: boolean;
  onCloned?: (id: number) => void;
  onDeleted?: () => void;
};

export function StudyView({ studyId, readOnly = false, canChange = true, onCloned, onDeleted }: StudyViewProps) {
  const study = useQuery(studyQueryOptions(studyId));
  if (study.isPending) return <Loading what="the study" />;
  if (study.error) return <ErrorBox error={study.error} />;
  return <StudyContent detail={study.data} readOnly={readOnly} canChange={canChange} onCloned={onCloned} onDeleted={onDeleted} />;
}

type StudyContentProps = Omit<StudyViewProps, "studyId"> & { detail: StudyDetail; readOnly: boolean; canChange: boolean };

function StudyContent({ detail, readOnly, canChange, onCloned, onDeleted }: StudyContentProps) {
  const { study, runs, cost_table: table } = detail;
  const anyActive = runs.some((run) => !FINISHED.has(run.status));
  const metrics = useComparedMetrics(runs, MAX_POINTS, anyActive ? LIVE_REFRESH_MS : false);

  const cellOf = useMemo(() => {
    const map = new Map<number, { cell: string; color: string }>();
    table.rows.forEach((row, index) => row.run_ids.forEach((id) => map.set(id, { cell: row.cell, color: cellColor(index) })));
    return map;
  }, [table.rows]);
  const runLabels = runs.map((r) => `${r.id}:${r.seed}:${r.status}:${cellOf.get(r.id)?.cell}`).join(",");
  const sets = useMemo<RunSeriesSet[]>(() => {
    const byRun = new Map((metrics.data?.data ?? []).map((m) => [m.run_id, m]));
    return studySeriesSets(
      runs.flatMap((run) => {
        const m = byRun.get(run.id);
        const cell = cellOf.get(run.id);
        return m
          ? [{ runId: run.id, seed: run.seed, cell: cell?.cell ?? run.method, color: cell?.color ?? "#888", series: seriesByKey(m.series), finished: run.status === "succeeded" }]
          : [];
      }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps -- runLabels stands for runs and their cells
  }, [metrics.data, runLabels]);

  const pareto = (costKey: string, qualityKey = "best_eval_loss"): ParetoPoint[] =>
    table.rows.flatMap((row, index) => {
      const quality = row.values[qualityKey];
      const cost = row.values[costKey];
      return quality && cost ? [{ label: row.cell, x: cost.mean, y: quality.mean, color: cellColor(index) }] : [];
    });
  const generationScored = runs.some((run) => run.status === "succeeded" && run.generation_eval?.tuned);

  return (
    <div className="study-page" data-study-id={study.id}>
      <div className="page-title">
        <h1>{study.name}</h1>
        <span className="help">
          {study.spec.model} · {study.spec.objective} ·{" "}
          {study.spec.budget.max_steps ? `${study.spec.budget.max_steps} steps` : `${study.spec.budget.train_tokens} tokens`} per run · seeds{" "}
          {(study.spec.seeds ?? []).join(", ")}
        </span>
      </div>
      {!readOnly && canChange && <StudyActions detail={detail} onCloned={onCloned} onDeleted={onDeleted} />}
      <section className="card compare-runs" aria-label="Runs">
        {runs.map((run: Run) => (
          <span className="compare-chip" key={run.id} data-run-id={run.id} data-status={run.status}>
            <i className="chart-swatch" style={{ background: cellOf.get(run.id)?.color }} />
            {readOnly ? <span>{run.name}</span> : <Link to={`/runs/${run.id}`}>{run.name}</Link>}
            <StatusBadge status={run.status} />
          </span>
        ))}
      </section>
      <ComparedMetricCharts
        sets={sets}
        metrics={metrics}
        status={anyActive && <span className="help live-dot">Live · every {LIVE_REFRESH_MS / 1000} s</span>}
        emptyTitle="The study's runs have logged no metrics yet"
        drawnNames={STUDY_CHARTS_DRAWN}
        gridTestId="study-charts"
      />
      <StudyCostTable table={table} />
      <section className="pareto-grid" data-testid="study-pareto">
        <ParetoChart title="Eval loss vs trainable params" unit="%" log points={pareto("trainable_percent")} />
        <ParetoChart title="Eval loss vs model state memory" unit="bytes" points={pareto("model_state_bytes")} />
        <ParetoChart title="Eval loss vs training time per 1k tokens" unit="s" points={pareto("seconds_per_1k_tokens")} />
        {generationScored && (
          <ParetoChart
            title="ROUGE-L vs trainable %"
            unit="%"
            log
            quality="ROUGE-L"
            better="higher"
            points={pareto("trainable_percent", "generation_rouge_l")}
          />
        )}
      </section>
    </div>
  );
}

function StudyActions({ detail, onCloned, onDeleted }: { detail: StudyDetail; onCloned?: (id: number) => void; onDeleted?: () => void }) {
  const studyId = detail.study.id;
  const [sharing, setSharing] = useState(false);
  const clone = useCloneStudy(studyId);
  const extend = useExtendStudy(studyId);
  const [extending, setExtending] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [seeds, setSeeds] = useState("");
  const [methods, setMethods] = useState("");
  const gridParams = Object.keys(detail.study.spec.grid ?? {});
  const [gridValues, setGridValues] = useState<Record<string, string>>({});
  const [extendError, setExtendError] = useState<string | null>(null);
  const submitExtend = () => {
    const parsedSeeds = parseSeeds(seeds);
    if (parsedSeeds === null) {
      setExtendError("Seeds: whole numbers separated by commas");
      return;
    }
    setExtendError(null);
    extend.mutate(
      {
        seeds: parsedSeeds,
        methods: parseList(methods).map(String),
        grid: Object.fromEntries(gridParams.map((param) => [param, parseList(gridValues[param] ?? "")])),
      },
      { onSuccess: () => setExtending(false), onError: (error) => setExtendError(error.message) },
    );
  };
  return (
    <section className="card toolbar study-actions" data-testid="study-actions">
      <button type="button" onClick={() => setSharing(true)} title="Make a read-only link anyone can open">
        Share
      </button>
      {sharing && <ShareDialog runs={detail.runs} study={{ id: studyId, name: detail.study.name }} onClose={() => setSharing(false)} />}
      <button type="button" data-testid="study-clone" disabled={clone.isPending} onClick={() => clone.mutate(null, { onSuccess: (d) => onCloned?.(d.study.id) })}>
        Clone
      </button>
      <button type="button" data-testid="study-extend" onClick={() => setExtending((open) => !open)}>
        Extend
      </button>
      <button type="button" className="danger" data-testid="study-delete" onClick={() => setDeleting((open) => !open)}>
        Delete
      </button>
      {extending && (
        <span className="study-extend">
          <input aria-label="More seeds" placeholder="More seeds, e.g. 7, 8" value={seeds} onChange={(e) => setSeeds(e.target.value)} />
          <input aria-label="More methods" placeholder="More methods, e.g. dora" value={methods} onChange={(e) => setMethods(e.target.value)} />
          {gridParams.map((param) => (
            <input
              key={param}
              aria-label={`More values of ${param}`}
              placeholder={`More ${param} values`}
              value={gridValues[param] ?? ""}
              onChange={(e) => setGridValues((current) => ({ ...current, [param]: e.target.value }))}
            />
          ))}
          <button type="button" className="primary" disabled={extend.isPending} onClick={submitExtend}>
            Add runs
          </button>
        </span>
      )}
      {extendError && <span className="field-error" role="alert">{extendError}</span>}
      {deleting && <DeleteStudyPanel detail={detail} onCancel={() => setDeleting(false)} onDeleted={onDeleted} />}
      {clone.error && <ErrorBox error={clone.error} />}
    </section>
  );
}

/** Asks whether the study's runs go with it (kept by default), then deletes; a refusal (a run still active) shows here. */
function DeleteStudyPanel({ detail, onCancel, onDeleted }: { detail: StudyDetail; onCancel: () => void; onDeleted?: () => void }) {
  const remove = useDeleteStudy(detail.study.id);
  const [withRuns, setWithRuns] = useState(false);
  const count = detail.runs.length;
  return (
    <div className="study-delete" role="group" aria-labelledby="study-delete-title" data-testid="study-delete-panel">
      <strong id="study-delete-title">Delete study “{detail.study.name}”?</strong>
      <label className="checkbox-label">
        <input type="radio" name="study-delete-runs" checked={!withRuns} onChange={() => setWithRuns(false)} />
        Keep its {count} run{count === 1 ? "" : "s"} (they stay in the runs table, outside any study)
      </label>
      <label className="checkbox-label">
        <input type="radio" name="study-delete-runs" data-testid="study-delete-with-runs" checked={withRuns} onChange={() => setWithRuns(true)} />
        Delete its {count} run{count === 1 ? "" : "s"} too, with their metrics and artifacts
      </label>
      <button type="button" className="danger" data-testid="study-delete-confirm" disabled={remove.isPending} onClick={() => remove.mutate(withRuns, { onSuccess: onDeleted })}>
        Delete study
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      {remove.error && (
        <span className="field-error" role="alert">
          {remove.error.message}
        </span>
      )}
    </div>
  );
}
