// Admins invite people who have no account yet: the invitation link is shown once, to be sent by hand.
import { useState, type FormEvent } from "react";

import type { Role } from "../../../api/client";
import { formErrors } from "../../../api/formErrors";
import { Card, CopyField, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { absoluteUrl } from "../../../lib/url";
import { ROLE_HELP, RoleSelect } from "../../auth";
import { useInviteUser } from "../api/mutations";

/** `projectName`: the project they join (you must own it); null: the account joins no project yet. */
export function InviteCard({ projectId, projectName }: { projectId: number; projectName: string | null }) {
  const invite = useInviteUser(projectId);
  const [email, setEmail] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const errors = formErrors(invite.error, { email: "invite_email", display_name: "invite_display_name", role: "invite_role" });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (invite.isPending) return;
    invite.mutate(
      {
        email: email.trim(),
        display_name: displayName.trim(),
        password: null,
        is_admin: false,
        project_id: projectName !== null ? projectId : null,
        role,
      },
      {
        onSuccess: () => {
          setEmail("");
          setDisplayName("");
        },
      },
    );
  };

  const created = invite.data;
  return (
    <Card id="invite" title="Invite someone">
      <p className="help">
        For people without an account{projectName !== null ? <> — they join <strong>{projectName}</strong> with the role you choose</> : ""}. You get a
        link to send them; they open it to choose a password.
      </p>
      <form className="inline-form" onSubmit={submit} noValidate>
        <div className="inline-fields">
          <Field name="invite_email" label="Email" error={errors.fields.invite_email}>
            <input {...fieldProps("invite_email", errors.fields.invite_email)} type="email" value={email} placeholder="newcomer@example.com" onChange={(e) => setEmail(e.target.value)} />
          </Field>
          <Field name="invite_display_name" label="Display name" error={errors.fields.invite_display_name}>
            <input
              {...fieldProps("invite_display_name", errors.fields.invite_display_name)}
              type="text"
              value={displayName}
              placeholder="optional"
              onChange={(e) => setDisplayName(e.target.value)}
            />
          </Field>
          {projectName !== null && (
            <Field name="invite_role" label="Role" error={errors.fields.invite_role} help={ROLE_HELP[role]}>
              <RoleSelect {...fieldProps("invite_role", errors.fields.invite_role)} value={role} onChange={setRole} />
            </Field>
          )}
          <button type="submit" className="primary" disabled={invite.isPending}>
            Create invitation
          </button>
        </div>
      </form>
      {errors.form && <ErrorBox error={errors.form} />}
      {created && (
        <div className="secret-box" data-testid="invite-created">
          {created.invite_url ? (
            <>
              <strong>Invitation for {created.user.email}. Copy the link now: it is shown only once.</strong>
              <CopyField value={absoluteUrl(window.location.origin, created.invite_url)} label="Invitation link" testId="invite-link" copyTestId="copy-invite-link" />
              <p className="help">It works once and for a limited time. Send it to them directly (chat, email).</p>
            </>
          ) : (
            <strong>Account created for {created.user.email}.</strong>
          )}
        </div>
      )}
    </Card>
  );
}
