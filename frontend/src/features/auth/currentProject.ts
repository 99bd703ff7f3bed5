// The project the app works in: chosen in the top bar, remembered in this browser.
import type { Schemas } from "../../api/client";

type Membership = Schemas["MembershipPublic"];

export const PROJECT_STORAGE_KEY = "tunelab.project";
const DEFAULT_PROJECT = "default";

/** The remembered project if the user is still a member; else `default`, else their first; undefined if none. */
export function pickProjectId(projects: readonly Membership[], remembered: number | null): number | undefined {
  if (remembered !== null && projects.some((p) => p.project_id === remembered)) return remembered;
  return (projects.find((p) => p.project_name === DEFAULT_PROJECT) ?? projects[0])?.project_id;
}

export function readRememberedProject(storage: Pick<Storage, "getItem"> | undefined = safeLocalStorage()): number | null {
  const raw = storage?.getItem(PROJECT_STORAGE_KEY);
  const id = raw ? Number(raw) : NaN;
  return Number.isInteger(id) && id > 0 ? id : null;
}

export function rememberProject(projectId: number, storage: Pick<Storage, "setItem"> | undefined = safeLocalStorage()): void {
  storage?.setItem(PROJECT_STORAGE_KEY, String(projectId));
}

function safeLocalStorage(): Storage | undefined {
  try {
    return typeof localStorage === "undefined" ? undefined : localStorage;
  } catch {
    return undefined; // storage disabled by the browser's privacy settings
  }
}
