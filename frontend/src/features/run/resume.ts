// Words for a run's resumes, shared by its actions and its header.
import type { Run } from "../../api/client";

/** The Resume button says where the run will continue from. */
export function resumeLabel(run: Pick<Run, "checkpoint_step">): string {
  return run.checkpoint_step ? `Resume from step ${run.checkpoint_step}` : "Restart (no checkpoint)";
}

/** "attempt 2 (1 automatic resume)" once a run has started more than once; empty for a first attempt. */
export function attemptLabel(run: Pick<Run, "attempt" | "auto_resumes">): string {
  if (run.attempt <= 1) return "";
  const automatic = run.auto_resumes > 0 ? ` (${run.auto_resumes} automatic resume${run.auto_resumes > 1 ? "s" : ""})` : "";
  return `attempt ${run.attempt}${automatic}`;
}
