// Where a run's weights came from and what was trained on from them: the runs it builds on, nearest first, and the
// runs that started from it. A run with neither gets no card.
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";

import type { Run, Schemas } from "../../../api/client";
import { Card, ErrorBox, StatusBadge } from "../../../components/ui/ui";
import { runLineageQueryOptions } from "../api/lineage";

type RunRef = Schemas["RunRefPublic"];

/** `linkRuns`: names link to the runs' pages (not on a shared page, whose link reaches no other page). */
export function LineageCard({ run, linkRuns = true }: { run: Run; linkRuns?: boolean }) {
  const lineage = useQuery(runLineageQueryOptions(run.id));
  const parentId = run.base_run_id ?? null;

  if (lineage.error) {
    // Only a run known to have a parent misses its lineage; for any other a failed read is no news.
    return parentId === null ? null : (
      <Card title="Lineage" testId="lineage-card">
        <ErrorBox error={lineage.error} />
      </Card>
    );
  }
  if (!lineage.data) return null;
  const { ancestors, children } = lineage.data;
  // A share link names only the runs it reaches, which may leave the parent out.
  const parentHidden = parentId !== null && ancestors[0]?.id !== parentId;
  if (ancestors.length === 0 && children.length === 0 && !parentHidden) return null;

  return (
    <Card title="Lineage" testId="lineage-card">
      {(ancestors.length > 0 || parentHidden) && (
        <section data-testid="lineage-ancestors">
          <h3>Started from{ancestors.length + (parentHidden ? 1 : 0) > 1 ? " (nearest first)" : ""}</h3>
          <ol className="lineage-list">
            {parentHidden && (
              <li className="help" data-testid="lineage-run" data-run-id={parentId}>
                #{parentId} (not shown here)
              </li>
            )}
            {ancestors.map((ancestor) => (
              <RunRefItem key={ancestor.id} runRef={ancestor} link={linkRuns} />
            ))}
          </ol>
        </section>
      )}
      {children.length > 0 && (
        <section data-testid="lineage-children">
          <h3>Runs started from it</h3>
          <ul className="lineage-list">
            {children.map((child) => (
              <RunRefItem key={child.id} runRef={child} link={linkRuns} />
            ))}
          </ul>
        </section>
      )}
    </Card>
  );
}

function RunRefItem({ runRef, link }: { runRef: RunRef; link: boolean }) {
  const label = `#${runRef.id} ${runRef.name}`;
  return (
    <li data-testid="lineage-run" data-run-id={runRef.id}>
      {link ? <Link to={`/runs/${runRef.id}`}>{label}</Link> : <span>{label}</span>} <StatusBadge status={runRef.status} />{" "}
      <span className="help">
        {runRef.objective} · {runRef.method}
      </span>
    </li>
  );
}
