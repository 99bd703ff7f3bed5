// Share links as their project sees them: who made each, how long it lives, whether anyone opened it; Revoke.
import { Link } from "react-router";

import type { Schemas } from "../../../api/client";
import { ErrorBox } from "../../../components/ui/ui";
import { formatDateTime, formatRelative } from "../../../lib/format";
import { useRevokeShare } from "../api/mutations";
import { sharedRunsPath, shareState } from "../links";

type Share = Schemas["SharePublic"];

/** `linkRuns`: titles link to the runs in the app (the settings page; the dialog is already on them). */
export function SharesTable({ shares, showRuns = true, linkRuns = false }: { shares: readonly Share[]; showRuns?: boolean; linkRuns?: boolean }) {
  const revoke = useRevokeShare();
  return (
    <>
      {revoke.error && <ErrorBox error={revoke.error} />}
      <div className="table-scroll">
        <table className="shares-table">
          <thead>
            <tr>
              <th>Title</th>
              {showRuns && <th>Runs</th>}
              <th>Made by</th>
              <th>Created</th>
              <th>Expires</th>
              <th>Last opened</th>
              <th className="num">Opens</th>
              <th title="Holders may read logs and download artifacts">Downloads</th>
              <th>
                <span className="visually-hidden">State</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shares.map((share) => {
              const state = shareState(share);
              const revoking = revoke.isPending && revoke.variables === share.id;
              return (
                <tr key={share.id} data-share-id={share.id} data-state={state}>
                  <td className="share-title" title={share.title}>
                    {linkRuns ? <Link to={sharedRunsPath(share)}>{share.title}</Link> : share.title}
                    <span className="help"> · {share.kind === "run" ? "run" : share.kind === "study" ? `study of ${share.run_ids.length} runs` : share.kind === "pipeline" ? `pipeline of ${share.run_ids.length} runs` : `${share.run_ids.length} runs`}</span>
                  </td>
                  {showRuns && <td className="mono">{share.run_ids.map((id) => `#${id}`).join(", ")}</td>}
                  <td>{share.created_by ?? "—"}</td>
                  <td title={formatDateTime(share.created_at)}>{formatRelative(share.created_at)}</td>
                  <td title={share.expires_at ? formatDateTime(share.expires_at) : undefined}>
                    {share.expires_at ? formatRelative(share.expires_at) : "never"}
                  </td>
                  <td title={share.last_opened_at ? formatDateTime(share.last_opened_at) : undefined}>
                    {share.last_opened_at ? formatRelative(share.last_opened_at) : "not yet"}
                  </td>
                  <td className="num">{share.open_count}</td>
                  <td>{share.allow_downloads ? "allowed" : "no"}</td>
                  <td className="row-actions">
                    {state === "active" ? (
                      <button
                        type="button"
                        className="danger small"
                        disabled={revoking}
                        title="Anyone who opens the link from now on sees that it was revoked"
                        onClick={() => revoke.mutate(share.id)}
                      >
                        {revoking ? "Revoking…" : "Revoke"}
                      </button>
                    ) : (
                      <span className={`badge badge-${state === "revoked" ? "failed" : "canceled"}`}>{state}</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}
