// Actions on the selected runs: tag, untag, cancel, delete (after a confirmation); all of them or, on an error, none.
// And a link to see them together as parallel coordinates.
import { useState } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ErrorBox } from "../../../components/ui/ui";
import { useBulkRunAction } from "../api/mutations";
import { isFinished } from "../api/queries";

type Props = {
  selectedIds: number[];
  /** The selected runs this page shows (a selection may span pages; the server checks every id). */
  selectedRuns: Run[];
  onDeleted: () => void;
};

export function splitTags(text: string): string[] {
  return [...new Set(text.split(",").map((t) => t.trim()).filter(Boolean))];
}

/** The analysis page for these runs, ids ascending as the Compare link has them (features/analysis reads them). */
function parallelCoordinatesHref(ids: Iterable<number>): string {
  return `/analysis?runs=${[...ids].sort((a, b) => a - b).join(",")}`;
}

export function BulkActions({ selectedIds, selectedRuns, onDeleted }: Props) {
  const bulk = useBulkRunAction();
  const [tagText, setTagText] = useState("");
  const tags = splitTags(tagText);
  const count = selectedIds.length;
  const allActive = selectedRuns.length === count && selectedRuns.every((run) => !isFinished(run));
  const allFinished = selectedRuns.length === count && selectedRuns.every(isFinished);

  const run = (action: "tag" | "untag" | "cancel" | "delete") =>
    bulk.mutate(
      { run_ids: selectedIds, action, tags: action === "tag" || action === "untag" ? tags : undefined },
      {
        onSuccess: () => {
          if (action === "tag" || action === "untag") setTagText("");
          if (action === "delete") onDeleted();
        },
      },
    );

  return (
    <div className="bulk-actions toolbar" data-testid="bulk-actions">
      <span className="help">{count} selected:</span>
      <input
        aria-label="Tags for the selected runs"
        placeholder="tags, comma-separated"
        value={tagText}
        onChange={(e) => setTagText(e.target.value)}
        data-testid="bulk-tags"
      />
      <button type="button" disabled={!tags.length || bulk.isPending} onClick={() => run("tag")} data-testid="bulk-tag">
        Add tags
      </button>
      <button type="button" disabled={!tags.length || bulk.isPending} onClick={() => run("untag")}>
        Remove tags
      </button>
      <Link className="button" to={parallelCoordinatesHref(selectedIds)} data-testid="bulk-analysis">
        Parallel coordinates
      </Link>
      <button
        type="button"
        className="danger"
        disabled={!allActive || bulk.isPending}
        title={allActive ? undefined : "Select only queued or running runs to cancel them"}
        onClick={() => {
          if (window.confirm(`Cancel ${count} ${count === 1 ? "run" : "runs"}? Each stops at its next step and keeps a checkpoint.`)) run("cancel");
        }}
      >
        Cancel runs
      </button>
      <button
        type="button"
        className="danger"
        disabled={!allFinished || bulk.isPending}
        title={allFinished ? undefined : "Only finished runs can be deleted; cancel the others first"}
        onClick={() => {
          if (window.confirm(`Delete ${count} ${count === 1 ? "run" : "runs"} with their metrics and artifacts? This cannot be undone.`)) run("delete");
        }}
        data-testid="bulk-delete"
      >
        Delete…
      </button>
      {bulk.error && <ErrorBox error={bulk.error} />}
    </div>
  );
}
