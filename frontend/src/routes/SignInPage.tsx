import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, Navigate, useNavigate, useSearchParams } from "react-router";

import { formErrors } from "../api/formErrors";
import { ErrorBox, Field, fieldProps } from "../components/ui/ui";
import { useSignIn } from "../features/auth/api/mutations";
import { setupQueryOptions } from "../features/auth/api/queries";
import { AuthCard } from "../features/auth/components/AuthCard";
import { safeNext } from "../features/auth/redirect";

export function SignInPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get("next"));
  const navigate = useNavigate();
  const setup = useQuery(setupQueryOptions());
  const signIn = useSignIn();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");

  if (setup.data?.needs_first_admin) return <Navigate to="/setup" replace />;

  const errors = formErrors(signIn.error, { email: "email", password: "password" });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (signIn.isPending) return;
    signIn.mutate({ email: email.trim(), password }, { onSuccess: () => navigate(next, { replace: true }) });
  };

  return (
    <AuthCard
      title="Sign in"
      footer={
        setup.data?.open_signup ? (
          <>
            New here? <Link to={`/sign-up${next !== "/" ? `?next=${encodeURIComponent(next)}` : ""}`}>Create an account</Link>
          </>
        ) : (
          <span className="help">No account? Ask a Tunelab admin for an invitation.</span>
        )
      }
    >
      <form className="auth-form" onSubmit={submit} noValidate>
        {errors.form && <ErrorBox error={errors.form} testId="form-error" />}
        <Field name="email" label="Email" error={errors.fields.email}>
          <input {...fieldProps("email", errors.fields.email)} type="email" autoComplete="username" autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        </Field>
        <Field name="password" label="Password" error={errors.fields.password}>
          <input {...fieldProps("password", errors.fields.password)} type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        </Field>
        <button type="submit" className="primary" disabled={signIn.isPending}>
          {signIn.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </AuthCard>
  );
}
