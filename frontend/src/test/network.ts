// The network under the real generated client in component tests: each test answers the requests it expects, and
// any other request fails the test with its method and path (no request reaches a server).
type Answer = Response | Promise<Response>;
export type Handler = (request: Request) => Answer;

let handler: Handler | null = null;

/** Answer this test's requests with `answer`; cleared after each test (setup.ts). */
export function fakeNetwork(answer: Handler): void {
  handler = answer;
}

export function resetNetwork(): void {
  handler = null;
}

/** A JSON answer, as the API sends it. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** An answer in the API's one error shape. */
export function apiError(status: number, code: string, message: string, details?: unknown): Response {
  return json({ error: { code, message, details } }, status);
}

/** What the client calls as `fetch` (setup.ts installs it before the client module is loaded). */
export async function fakeFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = input instanceof Request ? input : new Request(input, init);
  if (!handler) throw new Error(`unexpected request in a component test: ${request.method} ${new URL(request.url).pathname}`);
  return handler(request);
}

/**
 * Node's Request, resolving a path against the page's URL as a browser does: the client's base URL is "" (same origin),
 * which Node's own Request refuses.
 */
export class PageRequest extends Request {
  constructor(input: RequestInfo | URL, init?: RequestInit) {
    super(typeof input === "string" ? new URL(input, window.location.href) : input, init);
  }
}
