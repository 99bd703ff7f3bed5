// Every account with its status; admins deactivate or reactivate, grant or drop admin rights, re-send invitations.
import { ErrorBox } from "../../../components/ui/ui";
import { formatDateTime, formatRelative } from "../../../lib/format";
import { absoluteUrl } from "../../../lib/url";
import { useSession } from "../../auth";
import { ACCOUNT_STATUS, accountStatus, USER_ACTIONS, userActions, type User, type UserAction } from "../accounts";
import { useReissueInvitation, useUpdateUser } from "../api/mutations";
import { IssuedInviteBox, type IssuedInvite } from "./IssuedInvite";

/** `invite`: a link issued from this table, shown above it; `onInvite` hands a new one to the page. */
export function UsersTable({
  users,
  invite,
  onInvite,
}: {
  users: readonly User[];
  invite: IssuedInvite | null;
  onInvite: (invite: IssuedInvite) => void;
}) {
  const { me } = useSession();
  const update = useUpdateUser();
  const reissue = useReissueInvitation();

  // Only the latest action's failure is shown.
  const act = (user: User, action: UserAction) => {
    const body = USER_ACTIONS[action].update;
    if (body) {
      if (reissue.isError) reissue.reset();
      update.mutate({ userId: user.id, update: body });
    } else {
      if (update.isError) update.reset();
      reissue.mutate(user.id, {
        onSuccess: ({ invite_url }) =>
          onInvite({ email: user.email, url: absoluteUrl(window.location.origin, invite_url), reissued: true }),
      });
    }
  };
  const busy = (userId: number) =>
    (update.isPending && update.variables.userId === userId) || (reissue.isPending && reissue.variables === userId);
  const error = update.error ?? reissue.error;

  return (
    <>
      {error && <ErrorBox error={error} testId="users-error" />}
      {invite && <IssuedInviteBox invite={invite} />}
      <div className="table-scroll">
        <table className="users-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Email</th>
              <th>Status</th>
              <th>Created</th>
              <th>Last sign-in</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.map((user) => {
              const status = accountStatus(user);
              const isMe = user.id === me.user.id;
              return (
                <tr
                  key={user.id}
                  data-testid="user-row"
                  data-user-id={user.id}
                  data-email={user.email}
                  data-status={status}
                  data-admin={user.is_admin}
                >
                  <td>
                    {user.display_name}
                    {isMe && <span className="help"> (you)</span>}
                  </td>
                  <td>{user.email}</td>
                  <td>
                    <span className={`badge ${ACCOUNT_STATUS[status].badge}`} title={ACCOUNT_STATUS[status].help} data-testid="user-status">
                      {ACCOUNT_STATUS[status].label}
                    </span>
                    {user.is_admin && (
                      <span className="badge badge-running" title="Manages accounts" data-testid="user-admin">
                        Admin
                      </span>
                    )}
                  </td>
                  <td title={formatDateTime(user.created_at)}>{formatRelative(user.created_at)}</td>
                  <td title={user.last_sign_in_at ? formatDateTime(user.last_sign_in_at) : undefined}>
                    {user.last_sign_in_at ? formatRelative(user.last_sign_in_at) : "never"}
                  </td>
                  <td className="row-actions">
                    {userActions(user, me.user.id).map((action) => {
                      const { label, title, danger } = USER_ACTIONS[action];
                      return (
                        <button
                          key={action}
                          type="button"
                          className={danger ? "danger small" : "small"}
                          title={title}
                          aria-label={`${label}: ${user.email}`}
                          disabled={busy(user.id)}
                          onClick={() => act(user, action)}
                        >
                          {label}
                        </button>
                      );
                    })}
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
