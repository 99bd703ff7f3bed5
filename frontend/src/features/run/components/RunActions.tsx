// What a member can do to a run from its page; each control shows only for a role that may use it.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";

import { api, unwrap, type Role, type Run } from "../../../api/client";
import { canEdit } from "../../projects/roles";
import { isFinished, runKeys } from "../../runs/api/queries";
import { ShareButton } from "../../shares/components/ShareButton";

export function RunActions({ run, role }: { run: Run; role: Role | null }) {
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST("/api/v1/runs/{run_id}/cancel", { params: { path: { run_id: run.id } } })),
    onSuccess: (updated) => queryClient.setQueryData(runKeys.detail(run.id), updated),
  });
  const editor = canEdit(role);

  return (
    <>
      {cancel.error && (
        <span className="field-error" role="alert">
          {cancel.error.message}
        </span>
      )}
      {editor && !isFinished(run) && (
        <button
          className="danger"
          data-testid="cancel-run"
          disabled={cancel.isPending || run.cancel_requested}
          onClick={() => {
            if (window.confirm(`Cancel run “${run.name}”? It stops at the next step and keeps what it saved.`)) {
              cancel.mutate();
            }
          }}
        >
          {run.cancel_requested ? "Canceling…" : "Cancel"}
        </button>
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
