// The one way the app talks to the API: openapi-fetch typed by the client generated from /openapi.json.
import createClient, { type Middleware } from "openapi-fetch";

import type { components, paths } from "../client/schema";

export const api = createClient<paths>({ baseUrl: "" });

export type Schemas = components["schemas"];
export type Run = Schemas["RunPublic"];
export type RunStatus = Schemas["RunStatus"];
export type Dataset = Schemas["DatasetPublic"];
export type Role = Schemas["Role"];
export type ApiErrorBody = Schemas["ErrorResponse"];

/** An API error in the one error shape, thrown by `unwrap` so TanStack Query sees it as a failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }

  /** Field-level messages from a 422: {"params.learning_rate": "Input should be …"}. */
  fieldErrors(): Record<string, string> {
    const out: Record<string, string> = {};
    const details = this.details;
    const list = Array.isArray(details)
      ? details
      : details && typeof details === "object" && Array.isArray((details as { errors?: unknown }).errors)
        ? (details as { errors: unknown[] }).errors
        : [];
    for (const item of list) {
      if (item && typeof item === "object" && "field" in item && "message" in item) {
        const { field, message } = item as { field: string | null; message: string };
        if (field) out[field] = message;
      }
    }
    if (details && typeof details === "object" && "field" in details) {
      out[(details as { field: string }).field] = this.message.replace(/^[\w.]+: /, "");
    }
    return out;
  }
}

/** Turn an openapi-fetch result into data, or throw an ApiError carrying the server's code and message. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    const body = result.error as Partial<ApiErrorBody> | undefined;
    const error = body?.error;
    throw new ApiError(
      result.response.status,
      error?.code ?? "HTTP_ERROR",
      error?.message ?? `${result.response.status} ${result.response.statusText}`,
      error?.details,
    );
  }
  return result.data as T;
}

/** Retry only what may pass on a second try: network failures and 5xx, never a 4xx answer. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status < 500) return false;
  return failureCount < 1;
}

// Authentication on every request -----------------------------------------------------------------------------

export const CSRF_COOKIE = "tunelab_csrf";
export const CSRF_HEADER = "X-CSRF-Token";
export const SHARE_HEADER = "X-Share-Token";
/** For what cannot send a header: EventSource and <a href> downloads. */
export const SHARE_QUERY_PARAM = "share";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const SHARE_FAILURES = new Set(["SHARE_NOT_FOUND", "SHARE_REVOKED", "SHARE_EXPIRED"]);

/** One cookie's value from a `document.cookie` string; null when it is not set. */
export function readCookie(cookies: string, name: string): string | null {
  for (const part of cookies.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

/**
 * What a request adds to its own headers: the share token in shared mode, and on a state change the CSRF cookie's
 * value, which only a page of this origin can read (the session cookie alone would be sent by any site's form).
 */
export function authHeaders(method: string, cookies: string, shareToken: string | null): Record<string, string> {
  const headers: Record<string, string> = {};
  if (shareToken) headers[SHARE_HEADER] = shareToken;
  if (!SAFE_METHODS.has(method.toUpperCase())) {
    const csrf = readCookie(cookies, CSRF_COOKIE);
    if (csrf) headers[CSRF_HEADER] = csrf;
  }
  return headers;
}

/** A failed share-link answer's code (SHARE_REVOKED, SHARE_EXPIRED, SHARE_NOT_FOUND); null for any other answer. */
export function shareFailureCode(code: unknown): string | null {
  return typeof code === "string" && SHARE_FAILURES.has(code) ? code : null;
}

let shareToken: string | null = null;
const shareFailureListeners = new Set<(code: string) => void>();

/** Shared mode: every request carries this link token (null: the signed-in app, by cookie). */
export function setShareToken(token: string | null): void {
  shareToken = token;
}

/** `url` with ?share=<token> added in shared mode; unchanged otherwise. */
export function withShareParam(url: string, token: string | null = shareToken): string {
  if (!token) return url;
  return `${url}${url.includes("?") ? "&" : "?"}${SHARE_QUERY_PARAM}=${encodeURIComponent(token)}`;
}

/** Called when any answer in shared mode says the link was revoked, expired or never existed. */
export function onShareFailure(listener: (code: string) => void): () => void {
  shareFailureListeners.add(listener);
  return () => shareFailureListeners.delete(listener);
}

export function createAuthMiddleware(readCookies: () => string, readShareToken: () => string | null): Middleware {
  return {
    onRequest({ request }) {
      for (const [name, value] of Object.entries(authHeaders(request.method, readCookies(), readShareToken()))) {
        request.headers.set(name, value);
      }
      return request;
    },
    async onResponse({ response }) {
      if (!readShareToken() || (response.status !== 404 && response.status !== 410)) return undefined;
      const body = (await response.clone().json().catch(() => null)) as Partial<ApiErrorBody> | null;
      const code = shareFailureCode(body?.error?.code);
      if (code) for (const listener of shareFailureListeners) listener(code);
      return undefined;
    },
  };
}

api.use(
  createAuthMiddleware(
    () => (typeof document === "undefined" ? "" : document.cookie),
    () => shareToken,
  ),
);
