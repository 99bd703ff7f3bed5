// What a member can do to a run from its page; each control shows only for a role that may use it.
import { Link } from "react-router";

import type { Role, Run } from "../../../api/client";
import { canEdit } from "../../auth";
import { isFinished, useCancelRun, useResumeRun } from "../../runs";
import { ShareButton } from "../../shares";
import { resumeLabel } from "../resume";
import { ExportButton } from "./ExportButton";

export function RunActions({ run, role }: { run: Run; role: Role | null }) {
  const cancel = useCancelRun();
  const resume = useResumeRun();
  const editor = canEdit(role);
  const error = cancel.error ?? resume.error;
  const stopping = run.status === "running" && run.cancel_requested;

  return (
    <>
      {error && (
        <span className="field-error" role="alert">
          {error.message}
        </span>
      )}
      {editor && !isFinished(run) && !stopping && (
        <button
          className="danger"
          data-testid="cancel-run"
          disabled={cancel.isPending}
          onClick={() => {
            if (window.confirm(`Cancel run “${run.name}”? It stops at the next step and saves a checkpoint to resume from.`)) {
              cancel.mutate({ runId: run.id });
            }
          }}
        >
          Cancel
        </button>
      )}
      {editor && stopping && !run.external && (
        <button
          className="danger"
          data-testid="force-stop-run"
          disabled={cancel.isPending || run.force_stop_requested}
          title="For a run that does not stop: its worker kills the training process"
          onClick={() => {
            const kept = run.checkpoint_step !== null ? `its checkpoint at step ${run.checkpoint_step}` : "no checkpoint";
            if (window.confirm(`Kill the training process of “${run.name}” now? It keeps ${kept}.`)) {
              cancel.mutate({ runId: run.id, force: true });
            }
          }}
        >
          {run.force_stop_requested ? "Killing…" : "Force stop"}
        </button>
      )}
      {editor && !run.external && (run.status === "failed" || run.status === "canceled") && (
        <button disabled={resume.isPending} onClick={() => resume.mutate(run.id)}>
          {resumeLabel(run)}
        </button>
      )}
      {editor && !run.external && (run.status === "succeeded" || run.status === "canceled") && (
        <ExportButton run={run} />
      )}
      {editor && !run.external && run.status === "succeeded" && (
        <Link
          className="button"
          to={`/runs/new?base_run=${run.id}`}
          data-testid="continue-run"
          title="Launch a run that starts from this run's trained weights and tokenizer (SFT after pretraining, DPO after SFT)"
        >
          Continue from this run
        </Link>
      )}
      {editor && !run.external && (
        <Link className="button" to={`/runs/new?clone=${run.id}`} data-testid="clone-run">
          Clone
        </Link>
      )}
      <Link className="button" to={`/compare?runs=${run.id}`}>
        Compare…
      </Link>
      {editor && <ShareButton runs={[run]} />}
    </>
  );
}
