// Words for the run page's summary figures that depend on where the run is.
import type { Run } from "../../api/client";

/** The API keeps `final_eval_loss` current at every eval: it is final only once the run has succeeded. */
export function evalLossLabel(status: Run["status"]): string {
  if (status === "succeeded") return "Final eval loss";
  if (status === "failed" || status === "canceled") return "Last eval loss";
  return "Latest eval loss";
}
