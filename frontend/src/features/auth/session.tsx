// The signed-in user, their projects, and the project the app works in: given to every page of the signed-in app.
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from "react";
import type { ReactNode } from "react";
import { useLocation, useSearchParams } from "react-router";

import type { Role, Schemas } from "../../api/client";
import { pageShowsProject, parseProjectParam, pickProjectId, readRememberedProject, rememberProject } from "./currentProject";

export type Me = Schemas["MePublic"];
export type Membership = Schemas["MembershipPublic"];

export type Session = {
  me: Me;
  /** The project chosen in the top bar; undefined for someone in no project yet. */
  projectId: number | undefined;
  project: Membership | undefined;
  /** The caller's role in the current project. */
  role: Role | null;
  setProjectId: (projectId: number) => void;
  /** A project the URL names that the caller is not a member of (the page shows their own project instead). */
  unknownLinkedProject: number | null;
  /** The caller's role in any project (null: not a member). */
  roleIn: (projectId: number | undefined) => Role | null;
};

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ me, children }: { me: Me; children: ReactNode }) {
  const [remembered, setRemembered] = useState(() => readRememberedProject());
  const [searchParams, setSearchParams] = useSearchParams();
  const location = useLocation();
  const linked = parseProjectParam(searchParams.get("project"));
  const linkedIsMine = linked !== null && me.projects.some((p) => p.project_id === linked);
  const setProjectId = useCallback(
    (projectId: number) => {
      rememberProject(projectId);
      setRemembered(projectId);
      // The URL names the project where a page shows one: it follows the switch (else the link would win).
      setSearchParams(
        (current) => {
          if (!current.has("project")) return current;
          const next = new URLSearchParams(current);
          next.set("project", String(projectId));
          return next;
        },
        { replace: true },
      );
    },
    [setSearchParams],
  );
  // The project a followed link names becomes the one this browser works in.
  useEffect(() => {
    if (linkedIsMine && linked !== remembered) {
      rememberProject(linked);
      setRemembered(linked);
    }
  }, [linked, linkedIsMine, remembered]);
  const projectId = pickProjectId(me.projects, linkedIsMine ? linked : remembered);
  // A page of the project's runs, datasets or studies names it in its URL, so that a copied link opens it.
  const showsProject = pageShowsProject(location.pathname, searchParams);
  useEffect(() => {
    if (!showsProject || projectId === undefined || linked === projectId || (linked !== null && !linkedIsMine)) return;
    setSearchParams(
      (current) => {
        const next = new URLSearchParams(current);
        next.set("project", String(projectId));
        return next;
      },
      { replace: true },
    );
  }, [showsProject, projectId, linked, linkedIsMine, setSearchParams]);
  const value = useMemo<Session>(() => {
    const project = me.projects.find((p) => p.project_id === projectId);
    return {
      me,
      projectId,
      project,
      role: project?.role ?? null,
      setProjectId,
      unknownLinkedProject: linked !== null && !linkedIsMine ? linked : null,
      roleIn: (id) => me.projects.find((p) => p.project_id === id)?.role ?? null,
    };
  }, [me, projectId, linked, linkedIsMine, setProjectId]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession is for pages of the signed-in app");
  return session;
}
