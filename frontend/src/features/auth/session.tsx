// The signed-in user, their projects, and the project the app works in: given to every page of the signed-in app.
import { createContext, useCallback, useContext, useMemo, useState } from "react";
import type { ReactNode } from "react";

import type { Role, Schemas } from "../../api/client";
import { pickProjectId, readRememberedProject, rememberProject } from "./currentProject";

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
  /** The caller's role in any project (null: not a member). */
  roleIn: (projectId: number | undefined) => Role | null;
};

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ me, children }: { me: Me; children: ReactNode }) {
  const [remembered, setRemembered] = useState(() => readRememberedProject());
  const setProjectId = useCallback((projectId: number) => {
    rememberProject(projectId);
    setRemembered(projectId);
  }, []);
  const value = useMemo<Session>(() => {
    const projectId = pickProjectId(me.projects, remembered);
    const project = me.projects.find((p) => p.project_id === projectId);
    return {
      me,
      projectId,
      project,
      role: project?.role ?? null,
      setProjectId,
      roleIn: (id) => me.projects.find((p) => p.project_id === id)?.role ?? null,
    };
  }, [me, remembered, setProjectId]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession is for pages of the signed-in app");
  return session;
}
