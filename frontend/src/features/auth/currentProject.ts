// The project the app works in: named in the URL (?project=ID) so a pasted link opens the same project, else chosen
// in the top bar and remembered in this browser.
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

/** The `project` search param: a positive whole number, else null. */
export function parseProjectParam(raw: string | null): number | null {
  const id = raw !== null && /^\d+$/.test(raw) ? Number(raw) : NaN;
  return Number.isSafeInteger(id) && id > 0 ? id : null;
}

// Pages whose content is the current project's: their URL names it, so that a link shows the same runs to whoever
// opens it. A clone or a continued run goes into its source's project, so a URL naming another would mislead.
const PROJECT_PAGES = new Set(["/", "/runs/new", "/studies", "/studies/new", "/datasets", "/settings/project"]);

export function pageShowsProject(pathname: string, search: URLSearchParams): boolean {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
  if (path === "/runs/new" && (search.has("clone") || search.has("base_run"))) return false;
  return PROJECT_PAGES.has(path);
}

function safeLocalStorage(): Storage | undefined {
  try {
    return typeof localStorage === "undefined" ? undefined : localStorage;
  } catch {
    return undefined; // storage disabled by the browser's privacy settings
  }
}
