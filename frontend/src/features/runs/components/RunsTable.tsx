// The runs list: one row per run with live status and progress, sortable headers, selection and row actions; grouped,
// a header row per group with each figure's mean ± spread over the group's succeeded runs.
import { Fragment, useState } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ProgressBar, StatusBadge } from "../../../components/ui/ui";
import { formatBytes, formatDuration, formatNumber, formatPercent, runningProgressText } from "../../../lib/format";
import { formatGroupFigure, groupFigure, groupHeading, groupRuns } from "./groups";
import type { RunGroup } from "./groups";
import { SUMMARY_COLUMNS, metricBetter, metricValue, parseMetricColumn, summaryValue } from "./runsView";
import type { ColumnId, GroupBy, MetricAggregate, MetricColumnId, RunsView, SortField, SummaryColumnId } from "./runsView";

type Props = {
  runs: Run[];
  datasetNames: Map<number, string>;
  /** The figure columns after Dataset: summary figures, `param.<name>` and logged metrics (`min(eval/loss)`). */
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
    // As the run page's evaluation card shows them: fractions in percent, ROUGE-L 0–1, BLEU 0–100.
    case "exact_match":
    case "reward_accuracy":
      return value === null ? "—" : `${(value * 100).toFixed(1)} %`;
    case "rouge_l":
      return value === null ? "—" : value.toFixed(3);
    case "bleu":
      return value === null ? "—" : value.toFixed(1);
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

/** A column of figures: a run's value, how one shows, and which end is better (none: not ranked). */
type Figure = { value: (run: Run) => number | null; format: (value: number | null) => string; best?: "min" | "max" };

/** The figure a column shows; undefined for a column of other things (the run started from, a param). */
function figureOf(column: ColumnId): Figure | undefined {
  const metric = parseMetricColumn(column);
  if (metric) return { value: (run) => metricValue(run, column as MetricColumnId), format: (v) => formatNumber(v), best: metricBetter(metric.key) };
  const summary = SUMMARY_COLUMNS.find((c) => c.id === column);
  if (!summary || summary.id === "base_run_id") return undefined;
  return { value: (run) => summaryValue(run, summary.id), format: (v) => formatSummary(summary.id, v), best: "best" in summary ? summary.best : undefined };
}

/**
 * Per figure column with a better end (a summary figure, or a logged metric whose direction is known), the best value
 * among the finished (succeeded) runs shown: a running run's loss at step 6, or a canceled run's speed, is no result to
 * crown (none for fewer than two finished runs). A loss is its objective's own (a DPO loss of 0.6 is no better than
 * an SFT loss of 2.1): loss columns are ranked only among runs of one objective.
 */
const LOSS_COLUMNS = new Set<ColumnId>(["latest_train_loss", "best_eval_loss", "final_eval_loss", "best_eval_perplexity"]);

/** A figure measured on the objective's own loss (a summary loss, or a logged loss or perplexity). */
function isObjectiveLoss(column: ColumnId): boolean {
  const metric = parseMetricColumn(column);
  return metric ? /loss|perplexity/.test(metric.key) : LOSS_COLUMNS.has(column);
}

export function bestValues(runs: Run[], columns: ColumnId[]): Map<ColumnId, number> {
  const best = new Map<ColumnId, number>();
  const finished = runs.filter(isFinishedResult);
  if (finished.length < 2) return best;
  const oneObjective = new Set(finished.map((run) => run.objective)).size === 1;
  for (const column of columns) {
    const figure = figureOf(column);
    if (!figure?.best || (!oneObjective && isObjectiveLoss(column))) continue;
    const values = finished.map(figure.value).filter((v): v is number => v !== null && Number.isFinite(v));
    if (values.length) best.set(column, figure.best === "min" ? Math.min(...values) : Math.max(...values));
  }
  return best;
}

const AGGREGATE_TITLES: Record<MetricAggregate, string> = {
  last: "the latest value logged",
  min: "the lowest value logged over the run",
  max: "the highest value logged over the run",
};

function metricHeaderTitle(key: string, aggregate: MetricAggregate): string {
  const better = metricBetter(key);
  const ranked = better ? `; ${better === "min" ? "lower" : "higher"} is better` : "";
  return `Logged metric ${key}: ${AGGREGATE_TITLES[aggregate]}${ranked}`;
}

/** The one value of a param the group's runs share (undefined: none of them has it); null when they differ. */
function commonParam(group: RunGroup, column: string): { value: unknown } | null {
  const values = new Set(group.runs.map((run) => JSON.stringify(paramValue(run, column) ?? null)));
  return values.size === 1 ? { value: paramValue(group.runs[0], column) } : null;
}

/** Whether a run's figures are a result: it ran to its end. */
export function isFinishedResult(run: Run): boolean {
  return run.status === "succeeded";
}

export function RunsTable({ runs, datasetNames, columns, view, onSort, selected, maxSelected, onSelect, canChange, onCancel, cancelingIds, onClone }: Props) {
  const best = bestValues(runs, columns);
  // Collapsed groups by grouping and value, so regrouping by another field starts with every group open.
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set());
  const groupBy = view.group;
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

  const figureCell = (run: Run, column: ColumnId) => {
    if (column === "base_run_id") {
      return (
        <td key={column} data-column={column}>
          {run.base_run_id != null && (
            <Link to={`/runs/${run.base_run_id}`} title={`Started from run #${run.base_run_id}'s trained weights`}>
              #{run.base_run_id}
            </Link>
          )}
        </td>
      );
    }
    const figure = figureOf(column);
    if (!figure) {
      const value = formatParam(paramValue(run, column));
      return (
        <td key={column} className="num truncate" data-column={column} title={value}>
          {value}
        </td>
      );
    }
    const value = figure.value(run);
    const isBest = value !== null && isFinishedResult(run) && best.get(column) === value;
    const metric = parseMetricColumn(column);
    const logged = metric ? run.metric_columns?.[metric.key] : undefined;
    // A logged metric's full value, and for the latest one the step it was logged at.
    const exact = logged && metric ? `${value}${metric.aggregate === "last" ? ` at step ${logged.last_step}` : ""}` : undefined;
    const title = [exact, isBest ? "Best of the runs shown" : undefined].filter(Boolean).join(" · ") || undefined;
    return (
      <td key={column} className={`num${isBest ? " best" : ""}`} data-column={column} title={title}>
        {figure.format(value)}
      </td>
    );
  };

  // A group's header: its value and runs, collapsing them, and per figure the mean ± spread over its succeeded runs.
  const groupRow = (by: GroupBy, group: RunGroup, open: boolean, onToggle: () => void) => (
    <tr className="runs-group-row" data-testid="runs-group-row" data-group={group.label}>
      <th scope="rowgroup" colSpan={7} className="runs-group-heading">
        <button type="button" className="runs-group-toggle" aria-expanded={open} onClick={onToggle}>
          <span aria-hidden>{open ? "▾" : "▸"}</span> {groupHeading(by, group)}
        </button>
      </th>
      {columns.map((column) => {
        const figure = figureOf(column);
        if (figure) {
          const value = groupFigure(group, figure.value);
          const of = value && value.n < group.runs.length ? ` of the group's ${group.runs.length}` : "";
          return (
            <td
              key={column}
              className="num"
              data-column={column}
              title={value ? `Mean ± sample standard deviation over ${value.n} succeeded ${value.n === 1 ? "run" : "runs"}${of}` : "No succeeded run of the group has this figure"}
            >
              {formatGroupFigure(value, group.runs.length, figure.format)}
            </td>
          );
        }
        if (column === "base_run_id") return <td key={column} data-column={column} />;
        const shared = commonParam(group, column);
        return (
          <td key={column} className="num truncate" data-column={column} title={shared ? undefined : "Differs between the group's runs"}>
            {shared ? formatParam(shared.value) : ""}
          </td>
        );
      })}
      <td colSpan={2} />
    </tr>
  );

  const runRow = (run: Run, rowKey: string) => {
    const isSelected = selected.has(run.id);
    const active = run.status === "queued" || run.status === "running";
    const datasetName = run.dataset_id !== null ? (datasetNames.get(run.dataset_id) ?? `#${run.dataset_id}`) : "—";
    return (
      <tr key={rowKey} data-testid="run-row" data-run-id={run.id} className={isSelected ? "selected" : undefined}>
        <td>
          <input
            type="checkbox"
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
            <Link className="run-study-link help" to={`/studies/${run.study_id}`}>
              study #{run.study_id} · seed {run.seed}
            </Link>
          )}
          {(run.tags ?? []).length > 0 && (
            <span className="tag-chips" role="list" aria-label="Tags">
              {(run.tags ?? []).map((tag) => (
                <span key={tag} className="tag-chip" role="listitem">
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
        {columns.map((column) => figureCell(run, column))}
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
              const metric = parseMetricColumn(column);
              if (metric) {
                return (
                  <th key={column} className="num" title={metricHeaderTitle(metric.key, metric.aggregate)}>
                    {metric.key} <span className="help">{metric.aggregate}</span>
                  </th>
                );
              }
              const summary = SUMMARY_COLUMNS.find((c) => c.id === column);
              if (!summary) return <th key={column} className="num" title={`Parameter ${column.slice(6)}`}>{column.slice(6)}</th>;
              return <Fragment key={column}>{header(summary.label, "sort" in summary ? summary.sort : undefined, summary.id !== "base_run_id", summary.title)}</Fragment>;
            })}
            {header("Queued", "queued_at")}
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        {groupBy ? (
          groupRuns(runs, groupBy, datasetNames).map((group) => {
            const groupId = `${groupBy}\u0000${group.key}`;
            const open = !collapsed.has(groupId);
            return (
              <tbody key={group.key} className="runs-group" data-testid="runs-group">
                {groupRow(groupBy, group, open, () =>
                  setCollapsed((current) => {
                    const next = new Set(current);
                    if (open) next.add(groupId);
                    else next.delete(groupId);
                    return next;
                  }),
                )}
                {open && group.runs.map((run) => runRow(run, `${group.key}:${run.id}`))}
              </tbody>
            );
          })
        ) : (
          <tbody>{runs.map((run) => runRow(run, String(run.id)))}</tbody>
        )}
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
