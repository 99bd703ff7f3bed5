import { Link, useSearchParams } from "react-router";

import type { Run } from "../api/client";
import { RunIdsForm } from "../components/ui/RunIdsForm";
import { EmptyState } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { analysisHref } from "../features/analysis";
import { ComparisonView } from "../features/compare/components/ComparisonView";
import { MAX_COMPARE_RUNS, formatSelection, parseSelection } from "../features/compare/selection";
import { ComparePlayground } from "../features/playground";
import { useSearchUpdater } from "../features/metrics/controls";
import { canEdit } from "../features/auth/roles";
import { RunPicker } from "../features/runs";
import { ShareButton } from "../features/shares/components/ShareButton";

export function ComparePage() {
  const [params] = useSearchParams();
  const updateSearch = useSearchUpdater();
  const raw = params.get("runs");
  const selection = parseSelection(raw);

  const setIds = (ids: number[]) =>
    updateSearch((next) => {
      if (ids.length) next.set("runs", formatSelection(ids));
      else next.delete("runs");
    });

  return (
    <div className="compare-page" data-testid="compare-page">
      <div className="page-title">
        <h1>Compare runs</h1>
        <div className="card-actions analysis-title-actions">
          {selection.kind === "ok" && (
            <Link className="button" to={analysisHref(selection.ids)} data-testid="compare-analysis">
              Parallel coordinates
            </Link>
          )}
          <RunIdsForm value={raw ?? ""} parse={parseSelection} onApply={setIds} submitLabel="Compare" testId="compare-ids" />
        </div>
      </div>
      <RunPicker
        label="Add runs to the comparison"
        pickedIds={selection.kind === "ok" ? selection.ids : []}
        max={MAX_COMPARE_RUNS}
        onPick={(run) => setIds([...(selection.kind === "ok" ? selection.ids : []), run.id])}
      />
      {selection.kind === "none" && (
        <EmptyState title="No runs selected">
          <p>
            Pick runs on the <Link to="/">runs list</Link>, find them by name or tag above, or type their ids (up to {MAX_COMPARE_RUNS}).
          </p>
        </EmptyState>
      )}
      {selection.kind === "invalid" && (
        <div className="error-box" role="alert" data-testid="compare-message">
          Not run ids: {selection.tokens.join(", ")}. Use ?runs=1,2,3.
        </div>
      )}
      {selection.kind === "too-many" && (
        <div className="error-box" role="alert" data-testid="compare-message">
          {selection.count} runs selected; compare at most {MAX_COMPARE_RUNS} at once.
        </div>
      )}
      {selection.kind === "ok" && (
        <ComparisonView ids={selection.ids} onChangeIds={setIds} actions={(runs) => <ShareComparison runs={runs} />} />
      )}
      {selection.kind === "ok" && <ComparePlayground runIds={selection.ids} />}
    </div>
  );
}

/** Share the runs shown, for an editor or owner of their project; a link holds runs of one project only. */
function ShareComparison({ runs }: { runs: Run[] }) {
  const { roleIn } = useSession();
  const projectIds = new Set(runs.map((run) => run.project_id));
  if (![...projectIds].some((id) => canEdit(roleIn(id)))) return null;
  if (projectIds.size > 1) return <ShareButton runs={runs} disabledReason="A share link can show runs of one project only" />;
  return <ShareButton runs={runs} />;
}
