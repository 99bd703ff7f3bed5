// What a run's page says of its merged-model exports.
import type { Schemas } from "../../api/client";

export type RunExport = Schemas["RunExportPublic"];

/** Whether an export is still on its way (the page polls until it is not). */
export function exportInProgress(latest: Pick<RunExport, "status"> | undefined): boolean {
  return latest?.status === "queued" || latest?.status === "running";
}

/** The line beside the Export button for the newest export; empty before any. */
export function exportStatusLabel(latest: Pick<RunExport, "status" | "status_reason"> | undefined): string {
  switch (latest?.status) {
    case undefined:
      return "";
    case "queued":
      return "Export queued: waiting for a worker…";
    case "running":
      return "Merging the adapter into its base…";
    case "succeeded":
      return "Merged model ready";
    case "failed":
      return `Export failed: ${latest.status_reason ?? "no reason recorded"}`;
  }
}
