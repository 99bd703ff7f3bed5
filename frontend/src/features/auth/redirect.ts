// Where sign-in sends people back to, and when the signed-in app must send them to sign in.
import { ApiError } from "../../api/client";

/** Pages that work without a session: never a place to return to after signing in. */
const PUBLIC_PAGES = ["/sign-in", "/sign-up", "/setup", "/invite/", "/s/"];

export function isPublicPage(pathname: string): boolean {
  return PUBLIC_PAGES.some((page) => (page.endsWith("/") ? pathname.startsWith(page) : pathname === page));
}

/** The session is missing or expired (not a 401 for a wrong password or a bad API token). */
export function isAuthRequired(error: unknown): boolean {
  return error instanceof ApiError && error.status === 401 && error.code === "AUTH_REQUIRED";
}

/** The sign-in page for someone who was at `location`; it returns them there afterwards. */
export function signInPath(location: { pathname: string; search?: string; hash?: string }): string {
  const here = `${location.pathname}${location.search ?? ""}${location.hash ?? ""}`;
  if (here === "/" || isPublicPage(location.pathname)) return "/sign-in";
  return `/sign-in?next=${encodeURIComponent(here)}`;
}

/** `?next=` as a path on this site: anything else (another origin, a protocol-relative URL) goes to the runs. */
export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  const pathname = next.split(/[?#]/, 1)[0];
  return isPublicPage(pathname) ? "/" : next;
}
