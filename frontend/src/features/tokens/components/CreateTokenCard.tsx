import { useState, type FormEvent } from "react";

import { formErrors } from "../../../api/formErrors";
import { Card, CopyField, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { useCreateApiToken } from "../api/mutations";

const EXPIRY_DAYS = [
  { value: "", label: "Never" },
  { value: "7", label: "7 days" },
  { value: "30", label: "30 days" },
  { value: "90", label: "90 days" },
  { value: "365", label: "1 year" },
];

/** A token for scripts and the CLI; its secret is shown once, right here. */
export function CreateTokenCard() {
  const create = useCreateApiToken();
  const [name, setName] = useState("");
  const [days, setDays] = useState("90");
  const errors = formErrors(create.error, { name: "token_name", expires_in_days: "token_expires_in_days" });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    create.mutate({ name: name.trim(), expires_in_days: days ? Number(days) : null }, { onSuccess: () => setName("") });
  };

  const created = create.data;
  return (
    <Card title="New token">
      <form className="inline-form" onSubmit={submit} noValidate>
        <Field name="token_name" label="Name" error={errors.fields.token_name} help="What it is for, e.g. “laptop CLI” or “CI logger”">
          <input {...fieldProps("token_name", errors.fields.token_name)} type="text" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field name="token_expires_in_days" label="Expires after" error={errors.fields.token_expires_in_days}>
          <select {...fieldProps("token_expires_in_days", errors.fields.token_expires_in_days)} value={days} onChange={(e) => setDays(e.target.value)}>
            {EXPIRY_DAYS.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" className="primary" disabled={create.isPending}>
          Create token
        </button>
      </form>
      {errors.form && <ErrorBox error={errors.form} />}
      {created && (
        <div className="secret-box" data-testid="token-created">
          <strong>Token “{created.name}” created. Copy it now: it is not shown again.</strong>
          <CopyField value={created.token} label="API token" testId="token-secret" copyTestId="copy-token-secret" />
          <p className="help">
            Send it as the header <code>Authorization: Bearer &lt;token&gt;</code>, e.g.{" "}
            <code className="mono">
              curl -H "Authorization: Bearer {created.token.slice(0, 10)}…" {window.location.origin}/api/v1/runs
            </code>
          </p>
        </div>
      )}
    </Card>
  );
}
