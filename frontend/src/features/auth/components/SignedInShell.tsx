// The signed-in app's frame: it checks the install and the session, then shows the top bar and the page.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from "react-router";

import { Card, ErrorBox, Loading } from "../../../components/ui/ui";
import { CreateProjectForm } from "../../projects/components/CreateProjectForm";
import { ProjectSwitcher } from "../../projects/components/ProjectSwitcher";
import { canEdit } from "../../projects/roles";
import { meQueryOptions, setupQueryOptions } from "../api/queries";
import { isAuthRequired, signInPath } from "../redirect";
import { SessionProvider, useSession } from "../session";
import { UserMenu } from "./UserMenu";

export function SignedInShell() {
  const setup = useQuery(setupQueryOptions());
  const me = useQuery(meQueryOptions());
  const location = useLocation();
  useSignInOnExpiredSession();

  if (setup.data?.needs_first_admin) return <Navigate to="/setup" replace />;
  // The sign-in page itself sends a fresh install on to /setup.
  if (me.error && isAuthRequired(me.error)) return <Navigate to={signInPath(location)} replace />;
  if (!me.data) {
    return (
      <main className="page">{me.error ? <ErrorBox error={me.error} /> : <Loading what="your account" />}</main>
    );
  }
  return (
    <SessionProvider me={me.data}>
      <div className="app">
        <TopBar />
        <main className="page">
          <NoProjectNotice />
          <Outlet />
        </main>
      </div>
    </SessionProvider>
  );
}

function TopBar() {
  const { role } = useSession();
  return (
    <nav className="topbar">
      <NavLink to="/" className="brand" end>
        Tunelab
      </NavLink>
      <NavLink to="/" end>
        Runs
      </NavLink>
      {canEdit(role) && <NavLink to="/runs/new">New run</NavLink>}
      <NavLink to="/compare">Compare</NavLink>
      <NavLink to="/datasets">Datasets</NavLink>
      <div className="topbar-right">
        <ProjectSwitcher />
        <UserMenu />
      </div>
    </nav>
  );
}

function NoProjectNotice() {
  const { me, setProjectId } = useSession();
  if (me.projects.length > 0) return null;
  return (
    <Card title="You are not in any project yet">
      <p className="help">
        Runs, datasets and share links live in projects. Ask a project owner to add you, or start your own project.
      </p>
      <CreateProjectForm onCreated={(project) => setProjectId(project.id)} />
    </Card>
  );
}

/** Any read or write that answers 401 AUTH_REQUIRED (the session expired, or was signed out elsewhere): sign in again. */
function useSignInOnExpiredSession() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const location = useLocation();
  const here = useRef(location);
  here.current = location;

  useEffect(() => {
    const check = (error: unknown) => {
      if (isAuthRequired(error)) void navigate(signInPath(here.current), { replace: true });
    };
    const stopQueries = queryClient.getQueryCache().subscribe((event) => {
      if (event.type === "updated" && event.action.type === "error") check(event.action.error);
    });
    const stopMutations = queryClient.getMutationCache().subscribe((event) => {
      if (event.type === "updated" && event.action.type === "error") check(event.action.error);
    });
    return () => {
      stopQueries();
      stopMutations();
    };
  }, [queryClient, navigate]);
}
