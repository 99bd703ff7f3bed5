// Delete a finished run from its page, after the browser's confirmation; then back to the runs list.
import { useNavigate } from "react-router";

import type { Run } from "../../../api/client";
import { useDeleteRun } from "../api/mutations";
import { isFinished } from "../api/queries";

export function DeleteRunButton({ run }: { run: Run }) {
  const remove = useDeleteRun();
  const navigate = useNavigate();
  if (!isFinished(run)) return null;
  return (
    <>
      {remove.error && (
        <span className="field-error" role="alert">
          {remove.error.message}
        </span>
      )}
      <button
        type="button"
        className="danger"
        disabled={remove.isPending}
        onClick={() => {
          if (window.confirm(`Delete run “${run.name}” with its metrics and artifacts? This cannot be undone.`)) {
            remove.mutate(run.id, { onSuccess: () => navigate("/") });
          }
        }}
      >
        Delete
      </button>
    </>
  );
}
