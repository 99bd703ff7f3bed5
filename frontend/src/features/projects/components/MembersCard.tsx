// Who is in the project and with which role; owners change roles, remove people and add existing accounts.
import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";

import type { Role } from "../../../api/client";
import { formErrors } from "../../../api/formErrors";
import { Card, ErrorBox, Field, fieldProps, Loading } from "../../../components/ui/ui";
import { formatDateTime, formatRelative } from "../../../lib/format";
import { canOwn, ROLE_HELP, RoleSelect, useSession } from "../../auth";
import { useAddMember, useChangeMemberRole, useRemoveMember } from "../api/mutations";
import { membersQueryOptions } from "../api/queries";

export function MembersCard({ projectId, role }: { projectId: number; role: Role | null }) {
  const { me } = useSession();
  const members = useQuery(membersQueryOptions(projectId));
  const changeRole = useChangeMemberRole(projectId);
  const remove = useRemoveMember(projectId);
  const owner = canOwn(role);
  const error = changeRole.error ?? remove.error;

  return (
    <Card id="members" title={members.data ? `Members (${members.data.count})` : "Members"}>
      {members.isPending && <Loading what="members" />}
      {members.error && <ErrorBox error={members.error} />}
      {error && <ErrorBox error={error} />}
      {members.data && (
        <table className="members-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Email</th>
              <th>Role</th>
              <th>Added</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.data.map((member) => {
              const isMe = member.user_id === me.user.id;
              return (
                <tr key={member.user_id} data-user-id={member.user_id} data-email={member.email} data-role={member.role}>
                  <td>
                    {member.display_name}
                    {isMe && <span className="help"> (you)</span>}
                    {member.invite_pending && (
                      <span className="badge badge-queued" title="Has not opened the invitation yet">
                        invited
                      </span>
                    )}
                  </td>
                  <td>{member.email}</td>
                  <td>
                    {owner ? (
                      <RoleSelect
                        aria-label={`Role of ${member.email}`}
                        name="member_role_change"
                        value={member.role}
                        disabled={changeRole.isPending}
                        onChange={(role) => changeRole.mutate({ userId: member.user_id, role })}
                      />
                    ) : (
                      member.role
                    )}
                  </td>
                  <td title={formatDateTime(member.added_at)}>{formatRelative(member.added_at)}</td>
                  <td className="row-actions">
                    {owner && (
                      <button
                        type="button"
                        className="danger small"
                        disabled={remove.isPending}
                        aria-label={`Remove ${member.email} from the project`}
                        onClick={() => {
                          if (!isMe || window.confirm("Remove yourself from this project? You lose access to its runs.")) {
                            remove.mutate(member.user_id);
                          }
                        }}
                      >
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {owner ? <AddMemberForm projectId={projectId} /> : <p className="help">Only the project's owners change its members.</p>}
    </Card>
  );
}

function AddMemberForm({ projectId }: { projectId: number }) {
  const add = useAddMember(projectId);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const errors = formErrors(add.error, { email: "member_email", role: "member_role" });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (add.isPending) return;
    add.mutate({ email: email.trim(), role }, { onSuccess: () => setEmail("") });
  };

  return (
    <form className="inline-form add-member" onSubmit={submit} noValidate>
      <h3>Add someone who has an account</h3>
      <div className="inline-fields">
        <Field name="member_email" label="Email" error={errors.fields.member_email}>
          <input {...fieldProps("member_email", errors.fields.member_email)} type="email" value={email} placeholder="colleague@example.com" onChange={(e) => setEmail(e.target.value)} />
        </Field>
        <Field name="member_role" label="Role" error={errors.fields.member_role} help={ROLE_HELP[role]}>
          <RoleSelect {...fieldProps("member_role", errors.fields.member_role)} value={role} onChange={setRole} />
        </Field>
        <button type="submit" className="primary" disabled={add.isPending}>
          Add member
        </button>
      </div>
      {errors.form && <ErrorBox error={errors.form} />}
      {add.isSuccess && <p className="upload-ok">Added {add.data.email} as {add.data.role}.</p>}
    </form>
  );
}
