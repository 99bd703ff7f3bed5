// The signed-in app's frame (a layout route): it checks the install and the session, then shows the top bar (the
// account's menu, the project switcher) and the page. It composes features, so it lives here, not in one of them.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from "react-router";

import { Card, ErrorBox, Loading } from "../components/ui/ui";
import { meQueryOptions, setupQueryOptions } from "../features/auth/api/queries";
import { UserMenu } from "../features/auth/components/UserMenu";
import { isAuthRequired, signInPath } from "../features/auth/redirect";
import { canEdit } from "../features/auth/roles";
import { SessionProvider, useSession } from "../features/auth/session";
import { CreateProjectForm } from "../features/projects/components/CreateProjectForm";
import { ProjectSwitcher } from "../features/projects/components/ProjectSwitcher";

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
          <UnknownProjectNotice />
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
      <NavLink to="/studies">Studies</NavLink>
      <NavLink to="/pipelines">Pipelines</NavLink>
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

/** A pasted link names a project the reader is not in: say so, instead of silently showing their own project's runs. */
function UnknownProjectNotice() {
  const { unknownLinkedProject, project } = useSession();
  if (unknownLinkedProject === null) return null;
  return (
    <div className="notice" role="status" data-testid="unknown-project">
      This link is for project #{unknownLinkedProject}, which you are not a member of (or which no longer exists). Ask one of
      its owners to add you.{project && ` Showing ${project.project_name} instead.`}
    </div>
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
