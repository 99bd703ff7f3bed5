// Which figures the runs table shows: summary metrics and any parameter of the runs' resolved configs (kept in the URL).
import type { Run } from "../../../api/client";
import { SUMMARY_COLUMNS, columnsOf, toggleColumn } from "./runsView";
import type { ColumnId, RunsView } from "./runsView";

type Props = {
  view: RunsView;
  onChange: (view: RunsView) => void;
  runs: Run[];
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

export function ColumnChooser({ view, onChange, runs }: Props) {
  const shown = columnsOf(view);
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
        <fieldset>
          <legend>Summary</legend>
          {SUMMARY_COLUMNS.map((c) => checkbox(c.id, c.label, c.title))}
        </fieldset>
        {params.length > 0 && (
          <fieldset>
            <legend>Params</legend>
            {params.map((name) => checkbox(`param.${name}`, name))}
          </fieldset>
        )}
      </div>
    </details>
  );
}
