import { useState } from "react";

import type { Run } from "../../../api/client";
import { ShareDialog } from "./ShareDialog";

/** Opens the share dialog for these runs; the page shows it only to editors and owners of their project. */
export function ShareButton({ runs, disabledReason }: { runs: readonly Pick<Run, "id" | "name" | "project_id">[]; disabledReason?: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        data-testid="share-button"
        disabled={disabledReason !== undefined || runs.length === 0}
        title={disabledReason ?? "Make a read-only link anyone can open"}
        onClick={() => setOpen(true)}
      >
        Share
      </button>
      {open && <ShareDialog runs={runs} onClose={() => setOpen(false)} />}
    </>
  );
}
