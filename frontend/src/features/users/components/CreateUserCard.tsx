// An admin creates an account with a password, or without one to get an invitation link to send by hand.
import { useState, type FormEvent } from "react";

import { formErrors } from "../../../api/formErrors";
import { Card, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { absoluteUrl } from "../../../lib/url";
import { ROLE_HELP, RoleSelect, useSession } from "../../auth";
import { ownedProjects, userCreateBody, type NewAccountForm } from "../accounts";
import { useCreateUser } from "../api/mutations";
import { IssuedInviteBox, type IssuedInvite } from "./IssuedInvite";

const EMPTY: NewAccountForm = { email: "", displayName: "", password: "", isAdmin: false, projectId: "", role: "viewer" };

const FIELDS = {
  email: "user_email",
  display_name: "user_display_name",
  password: "user_password",
  is_admin: "user_is_admin",
  project_id: "user_project_id",
  role: "user_role",
};

/** `invite`: a link issued by this form, shown under it; `onInvite` hands a new one to the page. */
export function CreateUserCard({ invite, onInvite }: { invite: IssuedInvite | null; onInvite: (invite: IssuedInvite) => void }) {
  const { me } = useSession();
  const projects = ownedProjects(me.projects);
  const create = useCreateUser();
  const [form, setForm] = useState<NewAccountForm>(EMPTY);
  const set = <K extends keyof NewAccountForm>(key: K, value: NewAccountForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  // A project chosen earlier that the admin no longer owns is not offered, so it is not sent either.
  const projectId = projects.some((p) => String(p.project_id) === form.projectId) ? form.projectId : "";
  const errors = formErrors(create.error, FIELDS);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    create.mutate(userCreateBody({ ...form, projectId }), {
      onSuccess: (created) => {
        setForm((f) => ({ ...EMPTY, projectId: f.projectId, role: f.role }));
        if (created.invite_url) {
          onInvite({ email: created.user.email, url: absoluteUrl(window.location.origin, created.invite_url), reissued: false });
        }
      },
    });
  };

  const created = create.data;
  return (
    <Card id="create-account" title="Create account">
      <p className="help">
        Set a password and hand it over yourself, or leave it empty to get an invitation link they open to choose their own.
      </p>
      <form className="inline-form" onSubmit={submit} noValidate>
        <div className="inline-fields">
          <Field name="user_email" label="Email" error={errors.fields.user_email}>
            <input
              {...fieldProps("user_email", errors.fields.user_email)}
              type="email"
              autoComplete="off"
              value={form.email}
              placeholder="newcomer@example.com"
              onChange={(e) => set("email", e.target.value)}
            />
          </Field>
          <Field name="user_display_name" label="Display name" error={errors.fields.user_display_name}>
            <input
              {...fieldProps("user_display_name", errors.fields.user_display_name)}
              type="text"
              autoComplete="off"
              value={form.displayName}
              placeholder="optional"
              onChange={(e) => set("displayName", e.target.value)}
            />
          </Field>
          <Field name="user_password" label="Password" error={errors.fields.user_password} className="field-wide">
            <input
              {...fieldProps("user_password", errors.fields.user_password)}
              type="password"
              autoComplete="new-password"
              value={form.password}
              placeholder="leave empty to get an invitation link"
              onChange={(e) => set("password", e.target.value)}
            />
          </Field>
          <Field name="user_is_admin" label="Admin" error={errors.fields.user_is_admin} className="field-narrow">
            <label className="checkbox-label" htmlFor="field-user_is_admin">
              <input {...fieldProps("user_is_admin", errors.fields.user_is_admin)} type="checkbox" checked={form.isAdmin} onChange={(e) => set("isAdmin", e.target.checked)} />
              manages accounts
            </label>
          </Field>
          {projects.length > 0 && (
            <Field name="user_project_id" label="Add to project" error={errors.fields.user_project_id} help="Projects you own">
              <select {...fieldProps("user_project_id", errors.fields.user_project_id)} value={projectId} onChange={(e) => set("projectId", e.target.value)}>
                <option value="">No project</option>
                {projects.map((p) => (
                  <option key={p.project_id} value={p.project_id}>
                    {p.project_name}
                  </option>
                ))}
              </select>
            </Field>
          )}
          {projectId !== "" && (
            <Field name="user_role" label="Role" error={errors.fields.user_role} help={ROLE_HELP[form.role]}>
              <RoleSelect {...fieldProps("user_role", errors.fields.user_role)} value={form.role} onChange={(role) => set("role", role)} />
            </Field>
          )}
          <button type="submit" className="primary" disabled={create.isPending}>
            Create account
          </button>
        </div>
      </form>
      {errors.form && <ErrorBox error={errors.form} testId="create-user-error" />}
      {invite && <IssuedInviteBox invite={invite} />}
      {created && !created.invite_url && (
        <p className="upload-ok" data-testid="user-created">
          Account created for {created.user.email}. They sign in with the password you set.
        </p>
      )}
    </Card>
  );
}
