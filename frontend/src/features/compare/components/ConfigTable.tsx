import { useId, useState } from "react";

import type { Run } from "../../../api/client";
import { formatConfigValue } from "../../run";

type Row = { field: string; values: string[]; differs: boolean };

function datasetOf(run: Run): string {
  const dataset = (run.config as { dataset?: unknown }).dataset;
  if (dataset && typeof dataset === "object") {
    const d = dataset as { id?: number; name?: string };
    return d.name ? `${d.name}${d.id !== undefined ? ` (#${d.id})` : ""}` : `#${d.id ?? "?"}`;
  }
  return run.dataset_id !== null ? `#${run.dataset_id}` : "—";
}

export function configRows(runs: readonly Run[]): Row[] {
  const params = runs.map((run) => ((run.config as { params?: Record<string, unknown> }).params ?? {}) as Record<string, unknown>);
  const paramKeys = [...new Set(params.flatMap((p) => Object.keys(p)))].sort();
  const rows: [string, string[]][] = [
    ["objective", runs.map((r) => r.objective)],
    ["method", runs.map((r) => r.method)],
    ["model", runs.map((r) => r.model)],
    ["dataset", runs.map(datasetOf)],
    ...paramKeys.map((key): [string, string[]] => [
      `params.${key}`,
      params.map((p) => (key in p ? formatConfigValue(p[key]) : "—")),
    ]),
  ];
  return rows.map(([field, values]) => ({ field, values, differs: new Set(values).size > 1 }));
}

/** One column per run, one row per field; by default only the fields that differ. */
export function ConfigTable({ runs }: { runs: readonly Run[] }) {
  const [onlyDifferences, setOnlyDifferences] = useState(true);
  const titleId = useId();
  const rows = configRows(runs);
  const shown = onlyDifferences ? rows.filter((r) => r.differs) : rows;
  return (
    <section className="card" aria-labelledby={titleId}>
      <header className="card-header">
        <h2 id={titleId}>Config</h2>
        <label className="inline">
          <input
            type="checkbox"
            checked={onlyDifferences}
            onChange={(e) => setOnlyDifferences(e.target.checked)}
          />
          Only differences
        </label>
      </header>
      <div className="table-scroll">
        <table className="compare-table" aria-labelledby={titleId}>
          <thead>
            <tr>
              <th>Field</th>
              {runs.map((run) => (
                <th key={run.id} data-run-id={run.id}>
                  {run.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((row) => (
              <tr key={row.field} data-field={row.field} className={row.differs ? "differs" : undefined}>
                <th scope="row">{row.field}</th>
                {row.values.map((value, i) => (
                  <td key={runs[i].id} className="mono">
                    {value}
                  </td>
                ))}
              </tr>
            ))}
            {shown.length === 0 && (
              <tr>
                <td colSpan={runs.length + 1} className="help">
                  {runs.length < 2 ? "Add runs to see what differs." : "These runs share every field."}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}
