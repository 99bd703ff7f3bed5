// Share links as the UI shows them: which links show some runs, what they point at, and their state.
import type { Schemas } from "../../api/client";

type Share = Schemas["SharePublic"];

/** Where a link's runs are in the signed-in app: the pipeline's page, the run page, or the comparison of its runs. */
export function sharedRunsPath(share: Pick<Share, "run_ids" | "pipeline_id">): string {
  if (share.pipeline_id != null) return `/pipelines/${share.pipeline_id}`;
  return share.run_ids.length === 1 ? `/runs/${share.run_ids[0]}` : `/compare?runs=${share.run_ids.join(",")}`;
}

/** The links that show every one of these runs (a run page: links with that run; compare: links with all of them). */
export function linksShowing(shares: readonly Share[], runIds: readonly number[]): Share[] {
  return shares.filter((share) => runIds.every((id) => share.run_ids.includes(id)));
}

export type ShareState = "active" | "revoked" | "expired";

export function shareState(share: Pick<Share, "revoked_at" | "expires_at">, now: number = Date.now()): ShareState {
  if (share.revoked_at) return "revoked";
  if (share.expires_at && Date.parse(share.expires_at) <= now) return "expired";
  return "active";
}
