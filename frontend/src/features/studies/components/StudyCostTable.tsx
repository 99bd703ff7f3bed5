// The server's fair cost table of a study: mean ± spread over seeds per cell, "best" only beyond the noise.
import type { CostTable } from "../api/queries";
import { formatBytes, formatNumber } from "../../../lib/format";

type CostValue = { mean: number; spread: number; n: number };

function formatValue(unit: string, value: CostValue): string {
  const show = (v: number) =>
    unit === "bytes" ? formatBytes(v) : unit === "%" ? `${formatNumber(v, 3)} %` : unit === "s" ? `${formatNumber(v, 3)} s` : formatNumber(v, 4);
  return value.n > 1 ? `${show(value.mean)} ± ${show(value.spread)}` : show(value.mean);
}

export function StudyCostTable({ table, title = "Cost table", testId = "study-cost-table" }: { table: CostTable; title?: string; testId?: string }) {
  const columns = table.columns.filter((column) => table.rows.some((row) => row.values[column.key]));
  return (
    <section className="card" data-testid={testId}>
      <h2>{title}</h2>
      <div className="table-scroll">
        <table className="table">
          <thead>
            <tr>
              <th>Method</th>
              <th title="Figures are over the runs that succeeded; the others are listed with where they stand">Runs</th>
              {columns.map((column) => (
                <th key={column.key} title={column.not_ranked_reason ?? `lower is better`}>
                  {column.label}
                  {!column.ranked && <span className="help"> (not ranked)</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {table.rows.map((row) => (
              <tr key={row.cell} data-cell={row.cell}>
                <th scope="row">{row.cell}</th>
                <td data-testid="cell-runs" title={row.unfinished.length ? `Not measured: ${row.unfinished.join("; ")}` : undefined}>
                  {row.finished_run_ids.length === row.run_ids.length ? row.run_ids.length : `${row.finished_run_ids.length} of ${row.run_ids.length} finished`}
                  {row.unfinished.map((standing) => (
                    <span key={standing} className="help cell-unfinished">
                      {" "}
                      · {standing}
                    </span>
                  ))}
                </td>
                {columns.map((column) => {
                  const value = row.values[column.key];
                  const best = row.best.includes(column.key);
                  return (
                    <td key={column.key} className={best ? "best" : undefined} data-best={best || undefined}>
                      {value ? formatValue(column.unit, value) : "—"}
                      {best && <span className="best-mark"> best</span>}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {table.target_loss !== null && (
        <p className="help">Target loss for “tokens to target”: {formatNumber(table.target_loss, 4)} (the worst cell’s best eval loss, over finished runs).</p>
      )}
      {table.notes.map((note) => (
        <p key={note} className={note.startsWith("not ranked") ? "notice" : "help"} data-testid={note.startsWith("not ranked") ? "not-ranked" : undefined}>
          {note}
        </p>
      ))}
    </section>
  );
}
