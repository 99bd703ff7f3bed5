// The selected runs the charts leave out, and why: only succeeded runs are drawn, since a running or stopped run's
// figures are partial and must not be read beside final ones.
import { Link } from "react-router";

import type { NotDrawn } from "../dimensions";

export function NotDrawnRuns({ runs }: { runs: readonly NotDrawn[] }) {
  if (runs.length === 0) return null;
  return (
    <div className="analysis-not-drawn" data-testid="analysis-not-drawn">
      <span className="help">Not drawn (only succeeded runs are: partial figures do not compare with final ones):</span>
      <ul>
        {runs.map(({ run, reason }) => (
          <li key={run.id} data-run-id={run.id}>
            <Link to={`/runs/${run.id}`}>run {run.id}</Link> ({reason}) <span className="help">{run.name}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
