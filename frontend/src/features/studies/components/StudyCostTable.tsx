// The server's fair cost table of a study: mean ± spread over seeds per cell, "best" only beyond the noise, and first
// the base model's generation scores, the row each cell's gain is read against.
import { useId } from "react";

import type { CostTable } from "../api/queries";
import { formatBytes, formatNumber } from "../../../lib/format";

type CostValue = { mean: number; spread: number; n: number };
type Column = CostTable["columns"][number];

// Scores of generated answers come unitless; each reads best in its own digits (ROUGE-L 0–1, BLEU 0–100).
const DIGITS_BY_KEY: Record<string, number> = { generation_rouge_l: 3, generation_bleu: 1 };

function formatFigure(column: Column, v: number): string {
  if (column.unit === "bytes") return formatBytes(v);
  if (column.unit === "fraction") return `${(v * 100).toFixed(1)} %`;
  if (column.unit === "%") return `${formatNumber(v, 3)} %`;
  if (column.unit === "s") return `${formatNumber(v, 3)} s`;
  const digits = DIGITS_BY_KEY[column.key];
  return digits === undefined ? formatNumber(v, 4) : v.toFixed(digits);
}

function formatValue(column: Column, value: CostValue): string {
  const show = (v: number) => formatFigure(column, v);
  return value.n > 1 ? `${show(value.mean)} ± ${show(value.spread)}` : show(value.mean);
}

export function StudyCostTable({ table, title = "Cost table", testId = "study-cost-table" }: { table: CostTable; title?: string; testId?: string }) {
  const columns = table.columns.filter((column) => table.rows.some((row) => row.values[column.key]));
  const baseline = table.baseline ?? null;
  const titleId = useId();
  return (
    <section className="card" data-testid={testId} aria-labelledby={titleId}>
      <h2 id={titleId}>{title}</h2>
      <div className="table-scroll">
        <table className="table" aria-labelledby={titleId}>
          <thead>
            <tr>
              <th>Method</th>
              <th title="Figures are over the runs that succeeded; the others are listed with where they stand">Runs</th>
              {columns.map((column) => (
                <th key={column.key} title={column.not_ranked_reason ?? `${column.better} is better`}>
                  {column.label}
                  {!column.ranked && <span className="help"> (not ranked)</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {baseline && (
              <tr className="baseline-row" data-testid="baseline-row" title="The base model with no training, answering the same rows: what each cell gained">
                <th scope="row">{baseline.label}</th>
                <td>—</td>
                {columns.map((column) => {
                  const value = baseline.values[column.key];
                  return <td key={column.key}>{value === undefined ? "—" : formatFigure(column, value)}</td>;
                })}
              </tr>
            )}
            {table.rows.map((row) => (
              <tr key={row.cell} data-cell={row.cell}>
                <th scope="row">{row.cell}</th>
                <td title={row.unfinished.length ? `Not measured: ${row.unfinished.join("; ")}` : undefined}>
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
                      {value ? formatValue(column, value) : "—"}
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
