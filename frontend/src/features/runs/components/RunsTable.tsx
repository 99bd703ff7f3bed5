// The runs list: one row per run with live status and progress, sortable headers, selection and row actions.
import { Fragment } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ProgressBar, StatusBadge } from "../../../components/ui/ui";
import { formatBytes, formatDuration, formatNumber, formatPercent, runDuration, runningProgressText } from "../../../lib/format";
import { SUMMARY_COLUMNS } from "./runsView";
import type { ColumnId, RunsView, SortField, SummaryColumnId } from "./runsView";

type Props = {
  runs: Run[];
  datasetNames: Map<number, string>;
  /** The figure columns after Dataset: summary figures and `param.<name>` columns. */
  columns: ColumnId[];
  view: RunsView;
  onSort: (field: SortField) => void;
  selected: Set<number>;
  maxSelected: number;
  onSelect: (runIds: number[], checked: boolean) => void;
  /** The caller may cancel and clone these runs (an editor or owner of their project). */
  canChange: boolean;
  onCancel: (runId: number) => void;
  cancelingIds: Set<number>;
  onClone: (runId: number) => void;
};

const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const dayOfYear = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const fullDate = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** "14:05" today, "Nov 28" before: the column stays narrow and the title has the rest. */
function shortDate(iso: string, now = new Date()): string {
  const date = new Date(iso);
  return date.toDateString() === now.toDateString() ? timeOfDay.format(date) : dayOfYear.format(date);
}

function summaryValue(run: Run, id: SummaryColumnId): number | null {
  if (id === "wall_time_s") return run.wall_time_s ?? runDuration(run.started_at, run.finished_at);
  return run[id] ?? null;
}

function formatSummary(id: SummaryColumnId, value: number | null): string {
  switch (id) {
    case "trainable_percent":
      return formatPercent(value);
    case "peak_memory_bytes":
      return formatBytes(value);
    case "tokens_per_second":
      return formatNumber(value, 3);
    case "wall_time_s":
      return formatDuration(value);
    default:
      return formatNumber(value);
  }
}

function paramValue(run: Run, column: string): unknown {
  const params = (run.config as { params?: Record<string, unknown> }).params;
  return params?.[column.slice("param.".length)];
}

function formatParam(value: unknown): string {
  if (value === undefined || value === null) return "—";
  if (typeof value === "number") return formatNumber(value);
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * Per summary column with a better end, the best value among the finished (succeeded) runs shown: a running run's
 * loss at step 6, or a canceled run's speed, is no result to crown (none for fewer than two finished runs).
 */
export function bestValues(runs: Run[], columns: ColumnId[]): Map<ColumnId, number> {
  const best = new Map<ColumnId, number>();
  const finished = runs.filter(isFinishedResult);
  if (finished.length < 2) return best;
  for (const column of SUMMARY_COLUMNS) {
    if (!("best" in column) || !columns.includes(column.id)) continue;
    const values = finished.map((run) => summaryValue(run, column.id)).filter((v): v is number => v !== null && Number.isFinite(v));
    if (values.length) best.set(column.id, column.best === "min" ? Math.min(...values) : Math.max(...values));
  }
  return best;
}

/** Whether a run's figures are a result: it ran to its end. */
export function isFinishedResult(run: Run): boolean {
  return run.status === "succeeded";
}

export function RunsTable({ runs, datasetNames, columns, view, onSort, selected, maxSelected, onSelect, canChange, onCancel, cancelingIds, onClone }: Props) {
  const best = bestValues(runs, columns);
  const pageIds = runs.map((run) => run.id);
  const allSelected = pageIds.length > 0 && pageIds.every((id) => selected.has(id));
  const full = selected.size >= maxSelected;

  const header = (label: string, field?: SortField, numeric = false, title?: string) => {
    const active = field && view.sort === field;
    return (
      <th
        className={numeric ? "num" : undefined}
        title={title}
        aria-sort={active ? (view.order === "asc" ? "ascending" : "descending") : undefined}
      >
        {field ? (
          <button type="button" className="sort-button" onClick={() => onSort(field)}>
            {label}
            <span className="sort-arrow" aria-hidden>
              {active ? (view.order === "asc" ? "▲" : "▼") : ""}
            </span>
          </button>
        ) : (
          label
        )}
      </th>
    );
  };

  return (
    <div className="table-scroll">
      <table className="runs-table">
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select all runs on this page"
                checked={allSelected}
                disabled={!allSelected && full}
                onChange={(e) => onSelect(pageIds, e.target.checked)}
              />
            </th>
            {header("Name", "name")}
            {header("Status", "status")}
            {header("Progress")}
            {header("Method", "method", false, "Method · objective")}
            {header("Model")}
            {header("Dataset")}
            {columns.map((column) => {
              const summary = SUMMARY_COLUMNS.find((c) => c.id === column);
              if (!summary) return <th key={column} className="num" title={`Parameter ${column.slice(6)}`}>{column.slice(6)}</th>;
              return <Fragment key={column}>{header(summary.label, "sort" in summary ? summary.sort : undefined, true, summary.title)}</Fragment>;
            })}
            {header("Queued", "queued_at")}
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => {
            const isSelected = selected.has(run.id);
            const active = run.status === "queued" || run.status === "running";
            const datasetName = run.dataset_id !== null ? (datasetNames.get(run.dataset_id) ?? `#${run.dataset_id}`) : "—";
            return (
              <tr key={run.id} data-testid="run-row" data-run-id={run.id} className={isSelected ? "selected" : undefined}>
                <td>
                  <input
                    type="checkbox"
                    data-testid="select-run"
                    aria-label={`Select ${run.name}`}
                    checked={isSelected}
                    disabled={!isSelected && full}
                    onChange={(e) => onSelect([run.id], e.target.checked)}
                  />
                </td>
                <td className="run-name">
                  <Link to={`/runs/${run.id}`} title={run.notes ? `${run.name}\n\n${run.notes}` : run.name}>
                    {run.name}
                  </Link>
                  {run.study_id != null && (
                    <Link className="run-study-link help" to={`/studies/${run.study_id}`} data-testid="run-study">
                      study #{run.study_id} · seed {run.seed}
                    </Link>
                  )}
                  {(run.tags ?? []).length > 0 && (
                    <span className="tag-chips">
                      {(run.tags ?? []).map((tag) => (
                        <span key={tag} className="tag-chip" data-testid="run-tag">
                          {tag}
                        </span>
                      ))}
                    </span>
                  )}
                </td>
                <td title={run.status_reason ?? undefined}>
                  <StatusBadge status={run.status} />
                  {run.cancel_requested && active && <span className="help"> canceling…</span>}
                </td>
                <td>
                  <RunProgress run={run} />
                </td>
                <td>
                  {run.method} <span className="help">· {run.objective}</span>
                </td>
                <td className="truncate" title={run.model}>
                  {run.model}
                </td>
                <td className="truncate" title={datasetName}>
                  {datasetName}
                </td>
                {columns.map((column) => {
                  const summary = SUMMARY_COLUMNS.find((c) => c.id === column);
                  if (!summary) {
                    const value = formatParam(paramValue(run, column));
                    return (
                      <td key={column} className="num truncate" title={value}>
                        {value}
                      </td>
                    );
                  }
                  const value = summaryValue(run, summary.id);
                  const isBest = value !== null && isFinishedResult(run) && best.get(column) === value;
                  return (
                    <td key={column} className={`num${isBest ? " best" : ""}`} data-column={column} title={isBest ? "Best of the runs shown" : undefined}>
                      {formatSummary(summary.id, value)}
                    </td>
                  );
                })}
                <td title={fullDate.format(new Date(run.queued_at))}>{shortDate(run.queued_at)}</td>
                <td className="row-actions">
                  {canChange && active && (
                    <button
                      type="button"
                      className="danger small"
                      disabled={run.cancel_requested || cancelingIds.has(run.id)}
                      onClick={() => onCancel(run.id)}
                      aria-label={`Cancel ${run.name}`}
                    >
                      Cancel
                    </button>
                  )}
                  {canChange && !run.external && (
                    <button type="button" className="small" onClick={() => onClone(run.id)} aria-label={`Clone ${run.name}`}>
                      Clone
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function RunProgress({ run }: { run: Run }) {
  const { current_step, total_steps, percent } = run.progress;
  const steps = total_steps ? `step ${current_step} / ${total_steps}` : `step ${current_step}`;
  if (run.status === "queued") {
    return <span className="help">{run.queue_position ? `queue position ${run.queue_position}` : "queued"}</span>;
  }
  if (run.status === "running") {
    return <ProgressBar percent={percent} label={runningProgressText({ ...run.progress, percent: null })} />;
  }
  return <span className="help">{steps}</span>;
}
