// "Export merged model" for an editor of a finished run with an adapter: queues the merge, then shows its progress,
// the merged model's zip once it is done, or why it failed.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";

import { withShareParam, type Run } from "../../../api/client";
import { useExportMerged, runExportsQueryOptions } from "../api/exports";
import { artifactKeys, runArtifactsQueryOptions } from "../api/queries";
import { exportInProgress, exportStatusLabel } from "../export";

export function ExportButton({ run }: { run: Run }) {
  const queryClient = useQueryClient();
  const artifacts = useQuery(runArtifactsQueryOptions(run.id));
  const exports = useQuery(runExportsQueryOptions(run.id));
  const exportMerged = useExportMerged(run.id);
  const latest = exports.data?.data[0];
  const busy = exportInProgress(latest);
  const finishedStatus = busy ? null : latest?.status;

  // The merged model's files join the artifacts when the export ends.
  useEffect(() => {
    if (finishedStatus) void queryClient.invalidateQueries({ queryKey: artifactKeys.run(run.id) });
  }, [finishedStatus, queryClient, run.id]);

  const hasAdapter = artifacts.data?.archives?.some((archive) => archive.folder === "adapter") ?? false;
  if (!hasAdapter) return null;
  return (
    <span className="export-merged">
      <button
        disabled={busy || exportMerged.isPending}
        title="A worker merges the adapter into its base: one Hugging Face model, for AutoModelForCausalLM"
        onClick={() => exportMerged.mutate()}
      >
        {busy ? "Exporting…" : latest?.status === "succeeded" ? "Export merged model again" : "Export merged model"}
      </button>{" "}
      {exportMerged.error && (
        <span className="field-error" role="alert">
          {exportMerged.error.message}
        </span>
      )}
      {latest && (
        <span className={latest.status === "failed" ? "field-error" : "help"} role="status">
          {exportStatusLabel(latest)}
        </span>
      )}{" "}
      {latest?.archive_url && (
        <a href={withShareParam(latest.archive_url)} download>
          Download merged model (.zip)
        </a>
      )}
    </span>
  );
}
