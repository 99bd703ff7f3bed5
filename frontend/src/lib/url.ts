/** A whole address from a path the API answers (/s/<token>, /invite/<token>) and the page's origin. */
export function absoluteUrl(origin: string, path: string): string {
  return `${origin.replace(/\/+$/, "")}${path.startsWith("/") ? path : `/${path}`}`;
}
