import { Link, useSearchParams } from "react-router";

import { RunIdsForm } from "../components/ui/RunIdsForm";
import { EmptyState } from "../components/ui/ui";
import { AnalysisView, MAX_ANALYSIS_RUNS, parseAnalysisRuns } from "../features/analysis";
import { MAX_COMPARE_RUNS, formatSelection } from "../features/compare/selection";
import { useSearchUpdater } from "../features/metrics/controls";
import { RunPicker } from "../features/runs";

export function AnalysisPage() {
  const [params] = useSearchParams();
  const updateSearch = useSearchUpdater();
  const raw = params.get("runs");
  const selection = parseAnalysisRuns(raw);
  const ids = selection.kind === "ok" ? selection.ids : [];

  const setIds = (next: number[]) =>
    updateSearch((search) => {
      if (next.length) search.set("runs", formatSelection(next));
      else search.delete("runs");
    });

  return (
    <div className="analysis-page" data-testid="analysis-page">
      <div className="page-title">
        <h1>Parameters and results</h1>
        <div className="card-actions analysis-title-actions">
          {ids.length > 0 && ids.length <= MAX_COMPARE_RUNS && (
            <Link className="button" to={`/compare?runs=${formatSelection(ids)}`} data-testid="analysis-compare">
              Compare these runs
            </Link>
          )}
          <RunIdsForm value={raw ?? ""} parse={parseAnalysisRuns} onApply={setIds} submitLabel="Show" testId="analysis-ids" />
        </div>
      </div>
      <RunPicker label="Add runs" pickedIds={ids} max={MAX_ANALYSIS_RUNS} onPick={(run) => setIds([...ids, run.id])} />
      {selection.kind === "none" && (
        <EmptyState title="No runs selected">
          <p>
            Select runs on the <Link to="/">runs list</Link> and choose Parallel coordinates, open them from a comparison, find them by
            name or tag above, or type their ids (up to {MAX_ANALYSIS_RUNS}).
          </p>
          <p className="help">
            Each succeeded run becomes a line across its params and results, and a point on a scatter of one against another; runs that
            have not succeeded are listed, not drawn.
          </p>
        </EmptyState>
      )}
      {selection.kind === "invalid" && (
        <div className="error-box" role="alert" data-testid="analysis-message">
          Not run ids: {selection.tokens.join(", ")}. Use ?runs=1,2,3.
        </div>
      )}
      {selection.kind === "too-many" && (
        <div className="error-box" role="alert" data-testid="analysis-message">
          {selection.count} runs selected; draw at most {MAX_ANALYSIS_RUNS} at once.
        </div>
      )}
      {selection.kind === "ok" && <AnalysisView ids={selection.ids} />}
    </div>
  );
}
