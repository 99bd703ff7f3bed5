// Which figures the runs table shows: summary metrics, scores, lineage, any parameter of the runs' resolved configs and
// the last, min or max of any metric the project's runs logged (kept in the URL).
import { useQuery } from "@tanstack/react-query";

import type { Run } from "../../../api/client";
import { metricKeysQueryOptions } from "../api/queries";
import { MAX_METRIC_KEYS, METRIC_AGGREGATES, SUMMARY_COLUMNS, canAddMetricColumn, columnsOf, isMetricKey, metricColumnId, metricKeysOf, toggleColumn } from "./runsView";
import type { ColumnId, RunsView } from "./runsView";

type Props = {
  view: RunsView;
  onChange: (view: RunsView) => void;
  runs: Run[];
  /** Whose logged metric keys to offer; undefined: every project of the caller. */
  projectId: number | undefined;
};

/** The scalar params of the runs shown, by name: what a param column can show. */
export function scalarParamNames(runs: Run[]): string[] {
  const names = new Set<string>();
  for (const run of runs) {
    const params = (run.config as { params?: Record<string, unknown> }).params ?? {};
    for (const [name, value] of Object.entries(params)) {
      if (value === null || ["number", "string", "boolean"].includes(typeof value)) names.add(name);
    }
  }
  return [...names].sort();
}

const groupOf = (column: (typeof SUMMARY_COLUMNS)[number]) => ("group" in column ? column.group : "Summary");
const groups = [...new Set(["Summary", ...SUMMARY_COLUMNS.map(groupOf)])];

const AGGREGATE_HINTS = { last: "the latest value logged", min: "the lowest value logged", max: "the highest value logged" } as const;

export function ColumnChooser({ view, onChange, runs, projectId }: Props) {
  const shown = columnsOf(view);
  const metricKeys = useQuery(metricKeysQueryOptions(projectId));
  // A shown column stays listed (to be unticked) while the keys load, or when no run of the project logs it any more.
  const keys = [...new Set([...(metricKeys.data?.data ?? []).filter(isMetricKey), ...metricKeysOf(shown)])];
  const systemKeys = keys.filter((key) => key.startsWith("system/"));
  const metricRow = (key: string) => {
    const full = !canAddMetricColumn(view, key);
    return (
      <div key={key} className="column-chooser-metric" data-testid="metric-key">
        <span className="column-chooser-metric-key" title={key}>
          {key}
        </span>
        {METRIC_AGGREGATES.map((aggregate) => {
          const column = metricColumnId(key, aggregate);
          return (
            <label key={aggregate} className="checkbox-label" title={full ? `At most ${MAX_METRIC_KEYS} logged metrics can be columns` : `${key}: ${AGGREGATE_HINTS[aggregate]}`}>
              <input
                type="checkbox"
                aria-label={`${key} (${aggregate})`}
                checked={shown.includes(column)}
                disabled={full}
                onChange={(e) => onChange(toggleColumn(view, column, e.target.checked))}
                data-testid={`column-${column}`}
              />
              {aggregate}
            </label>
          );
        })}
      </div>
    );
  };
  const params = [...new Set([...scalarParamNames(runs), ...shown.filter((c) => c.startsWith("param.")).map((c) => c.slice(6))])].sort();
  const checkbox = (column: ColumnId, label: string, title?: string) => (
    <label key={column} className="checkbox-label" title={title}>
      <input
        type="checkbox"
        checked={shown.includes(column)}
        onChange={(e) => onChange(toggleColumn(view, column, e.target.checked))}
        data-testid={`column-${column}`}
      />
      {label}
    </label>
  );
  return (
    <details className="column-chooser" data-testid="column-chooser">
      <summary className="button">Columns</summary>
      <div className="column-chooser-menu">
        {groups.map((group) => (
          <fieldset key={group}>
            <legend>{group}</legend>
            {SUMMARY_COLUMNS.filter((c) => groupOf(c) === group).map((c) => checkbox(c.id, c.label, c.title))}
          </fieldset>
        ))}
        {params.length > 0 && (
          <fieldset>
            <legend>Params</legend>
            {params.map((name) => checkbox(`param.${name}`, name))}
          </fieldset>
        )}
        <fieldset>
          <legend>Logged metrics</legend>
          {metricKeys.isPending && <span className="help">Loading the logged metrics…</span>}
          {metricKeys.error && <span className="help">Could not list the logged metrics: {metricKeys.error.message}</span>}
          {metricKeys.isSuccess && keys.length === 0 && <span className="help">No run has logged a metric yet.</span>}
          {keys.filter((key) => !key.startsWith("system/")).map(metricRow)}
          {systemKeys.length > 0 && (
            <details className="column-chooser-system" data-testid="system-metric-keys">
              <summary>System ({systemKeys.length})</summary>
              {systemKeys.map(metricRow)}
            </details>
          )}
        </fieldset>
      </div>
    </details>
  );
}
