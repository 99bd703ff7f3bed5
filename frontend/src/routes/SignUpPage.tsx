import { useQuery } from "@tanstack/react-query";
import { Link, useNavigate, useSearchParams } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { useSignUp } from "../features/auth/api/mutations";
import { setupQueryOptions } from "../features/auth/api/queries";
import { AccountForm } from "../features/auth/components/AccountForm";
import { AuthCard } from "../features/auth/components/AuthCard";
import { safeNext } from "../features/auth/redirect";

export function SignUpPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get("next"));
  const navigate = useNavigate();
  const setup = useQuery(setupQueryOptions());
  const signUp = useSignUp();

  return (
    <AuthCard title="Create an account" footer={<>Have an account? <Link to="/sign-in">Sign in</Link></>}>
      {setup.isPending && <Loading what="the install's state" />}
      {setup.error && <ErrorBox error={setup.error} />}
      {setup.data && !setup.data.open_signup && (
        <p className="notice" data-testid="signup-closed">
          This Tunelab does not take sign-ups. Ask an admin for an invitation.
        </p>
      )}
      {setup.data?.open_signup && (
        <AccountForm
          submitLabel="Create account"
          pendingLabel="Creating…"
          pending={signUp.isPending}
          error={signUp.error}
          onSubmit={(values) => signUp.mutate(values, { onSuccess: () => navigate(next, { replace: true }) })}
        />
      )}
    </AuthCard>
  );
}
