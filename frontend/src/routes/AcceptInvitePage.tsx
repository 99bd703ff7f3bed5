import { useQuery } from "@tanstack/react-query";
import { useNavigate, useParams } from "react-router";

import { ApiError } from "../api/client";
import { ErrorBox, Loading } from "../components/ui/ui";
import { useAcceptInvite } from "../features/auth/api/mutations";
import { inviteQueryOptions } from "../features/auth/api/queries";
import { AccountForm } from "../features/auth/components/AccountForm";
import { AuthCard } from "../features/auth/components/AuthCard";

export function AcceptInvitePage() {
  const { token = "" } = useParams();
  const navigate = useNavigate();
  const invite = useQuery(inviteQueryOptions(token));
  const accept = useAcceptInvite();

  if (invite.error) {
    const invalid = invite.error instanceof ApiError && invite.error.status === 404;
    return (
      <AuthCard title={invalid ? "This invitation cannot be used" : "The invitation could not be read"}>
        <div data-testid="invite-invalid">
          <ErrorBox error={invite.error} />
        </div>
      </AuthCard>
    );
  }

  return (
    <AuthCard
      title="Join Tunelab"
      intro={invite.data ? <>You were invited as <strong>{invite.data.email}</strong>. Choose a password to finish your account.</> : undefined}
    >
      {invite.isPending && <Loading what="the invitation" />}
      {invite.data && (
        <AccountForm
          fixedEmail={invite.data.email}
          initialDisplayName={invite.data.display_name}
          submitLabel="Join Tunelab"
          pendingLabel="Joining…"
          pending={accept.isPending}
          error={accept.error}
          onSubmit={({ display_name, password }) =>
            accept.mutate({ token, password, display_name: display_name || null }, { onSuccess: () => navigate("/", { replace: true }) })
          }
        />
      )}
    </AuthCard>
  );
}
