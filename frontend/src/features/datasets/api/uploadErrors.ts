// An upload's failure as the user should read it: the server's message and its line-numbered errors.
import { ApiError } from "../../../api/client";

export type UploadProblem = { message: string; lines: string[]; more: number };

type LineError = { line?: number | null; field?: string | null; message?: string };

/** A cause names this many of its lines, then says how many more. */
const LINES_NAMED = 5;

/**
 * A DATASET_INVALID's row errors grouped by cause, in the order each cause first appears: "lines 2, 3, 4, 5, 6 and
 * 45 more: output: Field required" (a file of the wrong declared format gave 50 lines of one error); the message
 * alone for other failures.
 */
export function describeUploadError(error: unknown): UploadProblem {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof ApiError) || !error.details || typeof error.details !== "object") return { message, lines: [], more: 0 };
  const details = error.details as { errors?: unknown; more_errors?: unknown };
  const errors = Array.isArray(details.errors) ? (details.errors as LineError[]) : [];
  const causes = new Map<string, number[]>();
  const unnumbered: string[] = [];
  for (const e of errors) {
    const cause = [e.field, e.message].filter(Boolean).join(": ");
    if (e.line == null) unnumbered.push(cause);
    else causes.set(cause, [...(causes.get(cause) ?? []), e.line]);
  }
  const lines = [...causes].map(([cause, numbers]) => `${lineList(numbers)}: ${cause}`).concat(unnumbered);
  return { message, lines, more: typeof details.more_errors === "number" ? details.more_errors : 0 };
}

function lineList(numbers: number[]): string {
  if (numbers.length === 1) return `line ${numbers[0]}`;
  const named = numbers.slice(0, LINES_NAMED).join(", ");
  return numbers.length > LINES_NAMED ? `lines ${named} and ${numbers.length - LINES_NAMED} more` : `lines ${named}`;
}
