// The parallel coordinates as a table: the same runs and values, readable by keyboard and screen reader.
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { axisTitle, formatRunValue, isDrawable, type Axis } from "../dimensions";

export function AnalysisTable({ runs, axes }: { runs: readonly Run[]; axes: readonly Axis[] }) {
  const drawn = runs.filter(isDrawable);
  return (
    <div className="table-scroll">
      <table className="analysis-table" data-testid="analysis-table">
        <thead>
          <tr>
            <th>Run</th>
            {axes.map((axis) => (
              <th key={axis.dimension.key} className={axis.kind === "numeric" ? "num" : undefined}>
                {axisTitle(axis)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {drawn.map((run) => (
            <tr key={run.id} data-run-id={run.id}>
              <td>
                <Link to={`/runs/${run.id}`}>{run.name}</Link> <span className="help">run {run.id}</span>
              </td>
              {axes.map((axis) => (
                <td key={axis.dimension.key} className={axis.kind === "numeric" ? "num mono" : "mono"}>
                  {formatRunValue(axis.dimension, run)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
