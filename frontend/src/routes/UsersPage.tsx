import { useQuery } from "@tanstack/react-query";
import { useState } from "react";

import { ApiError } from "../api/client";
import { Card, EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { usersQueryOptions } from "../features/users/api/queries";
import { CreateUserCard } from "../features/users/components/CreateUserCard";
import type { IssuedInvite } from "../features/users/components/IssuedInvite";
import { UsersTable } from "../features/users/components/UsersTable";

export function UsersPage() {
  const { me } = useSession();
  return me.user.is_admin ? <UsersAdmin /> : <AdminsOnly />;
}

function AdminsOnly() {
  return (
    <EmptyState title="Only admins manage accounts">
      <p>Ask an admin to create, invite or deactivate an account.</p>
    </EmptyState>
  );
}

function UsersAdmin() {
  const users = useQuery(usersQueryOptions());
  // One invitation link on screen at a time: the latest, from the table or from the form.
  const [invite, setInvite] = useState<IssuedInvite | null>(null);
  // Admin rights dropped since the page loaded (by another admin).
  if (users.error instanceof ApiError && users.error.status === 403) return <AdminsOnly />;

  return (
    <>
      <h1>Users</h1>
      <p className="help page-intro">
        Every account on this Tunelab. Deactivating one signs it out everywhere and stops its API tokens; its runs and
        datasets stay.
      </p>
      <Card id="accounts" title={users.data ? `Accounts (${users.data.count})` : "Accounts"}>
        {users.isPending && <Loading what="accounts" />}
        {users.error && <ErrorBox error={users.error} />}
        {/* Never empty: the admin reading it has an account. */}
        {users.data && <UsersTable users={users.data.data} invite={invite?.reissued ? invite : null} onInvite={setInvite} />}
      </Card>
      <CreateUserCard invite={invite && !invite.reissued ? invite : null} onInvite={setInvite} />
    </>
  );
}
