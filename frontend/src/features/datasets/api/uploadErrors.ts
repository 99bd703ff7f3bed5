// An upload's failure as the user should read it: the server's message and its line-numbered errors.
import { ApiError } from "../../../api/client";

export type UploadProblem = { message: string; lines: string[]; more: number };

type LineError = { line?: number | null; field?: string | null; message?: string };

/** "line 17: output: Field required" for each row error of a DATASET_INVALID; the message alone otherwise. */
export function describeUploadError(error: unknown): UploadProblem {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof ApiError) || !error.details || typeof error.details !== "object") return { message, lines: [], more: 0 };
  const details = error.details as { errors?: unknown; more_errors?: unknown };
  const errors = Array.isArray(details.errors) ? (details.errors as LineError[]) : [];
  const lines = errors.map((e) => [e.line != null ? `line ${e.line}` : null, e.field, e.message].filter(Boolean).join(": "));
  return { message, lines, more: typeof details.more_errors === "number" ? details.more_errors : 0 };
}
