// The selected runs the charts leave out, and why: only succeeded runs are drawn, since a running or stopped run's
// figures are partial and must not be read beside final ones.
import { useId } from "react";
import { Link } from "react-router";

import type { NotDrawn } from "../dimensions";

export function NotDrawnRuns({ runs }: { runs: readonly NotDrawn[] }) {
  const titleId = useId();
  if (runs.length === 0) return null;
  return (
    <div className="analysis-not-drawn" data-testid="analysis-not-drawn">
      <span className="help" id={titleId}>
        Not drawn (only succeeded runs are: partial figures do not compare with final ones):
      </span>
      <ul aria-labelledby={titleId}>
        {runs.map(({ run, reason }) => (
          <li key={run.id} data-run-id={run.id}>
            <Link to={`/runs/${run.id}`}>run {run.id}</Link> ({reason}) <span className="help">{run.name}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
