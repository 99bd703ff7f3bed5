// The one way the app talks to the API: openapi-fetch typed by the client generated from /openapi.json.
import createClient from "openapi-fetch";

import type { components, paths } from "../client/schema";

export const api = createClient<paths>({ baseUrl: "" });

export type Schemas = components["schemas"];
export type Run = Schemas["RunPublic"];
export type RunStatus = Schemas["RunStatus"];
export type Dataset = Schemas["DatasetPublic"];
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
