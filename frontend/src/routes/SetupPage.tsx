import { useQuery } from "@tanstack/react-query";
import { Navigate, useNavigate } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { useCreateFirstAdmin } from "../features/auth/api/mutations";
import { setupQueryOptions } from "../features/auth/api/queries";
import { AccountForm } from "../features/auth/components/AccountForm";
import { AuthCard } from "../features/auth/components/AuthCard";

export function SetupPage() {
  const navigate = useNavigate();
  const setup = useQuery(setupQueryOptions());
  const create = useCreateFirstAdmin();

  if (setup.data && !setup.data.needs_first_admin && !create.isSuccess) return <Navigate to="/sign-in" replace />;

  return (
    <AuthCard
      title="Set up Tunelab"
      intro="This is a fresh install. Create the admin account: it owns the default project and can invite your team."
    >
      {setup.isPending && <Loading what="the install's state" />}
      {setup.error && <ErrorBox error={setup.error} />}
      {setup.data && (
        <AccountForm
          submitLabel="Create admin account"
          pendingLabel="Creating…"
          pending={create.isPending}
          error={create.error}
          onSubmit={(values) => create.mutate(values, { onSuccess: () => navigate("/", { replace: true }) })}
        />
      )}
    </AuthCard>
  );
}
