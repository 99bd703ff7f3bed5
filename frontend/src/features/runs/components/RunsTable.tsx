// The runs list: one row per run with live status and progress, sortable headers, selection and row actions.
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ProgressBar, StatusBadge } from "../../../components/ui/ui";
import { formatBytes, formatDuration, formatNumber, formatPercent, runDuration } from "../../../lib/format";
import type { RunsView, SortField } from "./runsView";

type Props = {
  runs: Run[];
  datasetNames: Map<number, string>;
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

export function RunsTable({ runs, datasetNames, view, onSort, selected, maxSelected, onSelect, canChange, onCancel, cancelingIds, onClone }: Props) {
  const bestEval = Math.min(...runs.map((run) => run.best_eval_loss ?? Infinity));
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
            {header("Loss", undefined, true, "Latest train loss")}
            {header("Eval", "best_eval_loss", true, "Best eval loss")}
            {header("Train %", undefined, true, "Trainable parameters, % of the model")}
            {header("Mem", undefined, true, "Peak memory")}
            {header("Tok/s", "tokens_per_second", true, "Training tokens per second")}
            {header("Time", "wall_time_s", true, "Duration")}
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
                  <Link to={`/runs/${run.id}`} title={run.name}>
                    {run.name}
                  </Link>
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
                <td className="num">{formatNumber(run.latest_train_loss)}</td>
                <td className={`num${run.best_eval_loss !== null && run.best_eval_loss === bestEval && runs.length > 1 ? " best" : ""}`}>
                  {formatNumber(run.best_eval_loss)}
                </td>
                <td className="num">{formatPercent(run.trainable_percent)}</td>
                <td className="num">{formatBytes(run.peak_memory_bytes)}</td>
                <td className="num">{formatNumber(run.tokens_per_second, 3)}</td>
                <td className="num">{formatDuration(run.wall_time_s ?? runDuration(run.started_at, run.finished_at))}</td>
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
  const { current_step, total_steps, percent, eta_seconds } = run.progress;
  const steps = total_steps ? `step ${current_step} / ${total_steps}` : `step ${current_step}`;
  if (run.status === "queued") {
    return <span className="help">{run.queue_position ? `queue position ${run.queue_position}` : "queued"}</span>;
  }
  if (run.status === "running") {
    const eta = eta_seconds !== null ? ` · ETA ${formatDuration(eta_seconds)}` : "";
    return <ProgressBar percent={percent} label={`${steps}${eta}`} />;
  }
  return <span className="help">{steps}</span>;
}
