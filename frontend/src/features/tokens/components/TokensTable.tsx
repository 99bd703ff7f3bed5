import type { Schemas } from "../../../api/client";
import { ErrorBox } from "../../../components/ui/ui";
import { formatDateTime, formatRelative } from "../../../lib/format";
import { useRevokeApiToken } from "../api/mutations";

export function TokensTable({ tokens }: { tokens: readonly Schemas["ApiTokenPublic"][] }) {
  const revoke = useRevokeApiToken();
  return (
    <>
      {revoke.error && <ErrorBox error={revoke.error} />}
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Token</th>
            <th>Created</th>
            <th>Last used</th>
            <th>Expires</th>
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => {
            const expired = token.expires_at !== null && Date.parse(token.expires_at) <= Date.now();
            const revoking = revoke.isPending && revoke.variables === token.id;
            return (
              <tr key={token.id} data-testid="token-row" data-token-id={token.id}>
                <td>{token.name}</td>
                <td className="mono">{token.hint}…</td>
                <td title={formatDateTime(token.created_at)}>{formatRelative(token.created_at)}</td>
                <td title={token.last_used_at ? formatDateTime(token.last_used_at) : undefined}>
                  {token.last_used_at ? formatRelative(token.last_used_at) : "never"}
                </td>
                <td title={token.expires_at ? formatDateTime(token.expires_at) : undefined}>
                  {token.expires_at ? (expired ? <span className="badge badge-canceled">expired</span> : formatRelative(token.expires_at)) : "never"}
                </td>
                <td className="row-actions">
                  <button
                    type="button"
                    className="danger small"
                    disabled={revoking}
                    title="Scripts using this token stop working at once"
                    onClick={() => revoke.mutate(token.id)}
                  >
                    {revoking ? "Revoking…" : "Revoke"}
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}
