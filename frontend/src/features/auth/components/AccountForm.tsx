// The form that makes an account with a password: the first admin, a sign-up, an accepted invitation.
import { useState, type FormEvent, type ReactNode } from "react";

import { formErrors } from "../../../api/formErrors";
import { ErrorBox, Field, fieldProps } from "../../../components/ui/ui";

export type AccountValues = { email: string; display_name: string; password: string };

export function AccountForm({
  submitLabel,
  pendingLabel,
  pending,
  error,
  onSubmit,
  fixedEmail,
  initialDisplayName = "",
  children,
}: {
  submitLabel: string;
  pendingLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (values: AccountValues) => void;
  /** An invitation's address: shown, not asked for. */
  fixedEmail?: string;
  initialDisplayName?: string;
  children?: ReactNode;
}) {
  const [email, setEmail] = useState("");
  const [displayName, setDisplayName] = useState(initialDisplayName);
  const [password, setPassword] = useState("");
  const errors = formErrors(error, {
    ...(fixedEmail === undefined ? { email: "email" } : {}),
    display_name: "display_name",
    password: "password",
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!pending) onSubmit({ email: (fixedEmail ?? email).trim(), display_name: displayName.trim(), password });
  };

  return (
    <form className="auth-form" onSubmit={submit} noValidate>
      {errors.form && <ErrorBox error={errors.form} testId="form-error" />}
      {fixedEmail === undefined ? (
        <Field name="email" label="Email" error={errors.fields.email} help="You sign in with it">
          <input {...fieldProps("email", errors.fields.email)} type="email" autoComplete="username" autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        </Field>
      ) : (
        <Field name="email" label="Email" help="The invitation was sent to it">
          <input id="field-email" type="email" className="fixed-value" data-testid="invite-email" value={fixedEmail} readOnly />
        </Field>
      )}
      <Field name="display_name" label="Display name" error={errors.fields.display_name} help="Shown to your teammates in member lists and the audit log">
        <input
          {...fieldProps("display_name", errors.fields.display_name)}
          type="text"
          autoComplete="name"
          autoFocus={fixedEmail !== undefined}
          value={displayName}
          placeholder={fixedEmail?.split("@")[0] ?? "e.g. Ada Lovelace"}
          onChange={(e) => setDisplayName(e.target.value)}
        />
      </Field>
      <Field name="password" label="Password" error={errors.fields.password} help="At least 8 characters">
        <input {...fieldProps("password", errors.fields.password)} type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
      </Field>
      {children}
      <button type="submit" className="primary" disabled={pending}>
        {pending ? pendingLabel : submitLabel}
      </button>
    </form>
  );
}
