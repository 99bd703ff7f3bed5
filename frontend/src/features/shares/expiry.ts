// A share link's lifetime as the dialog offers it, turned into the expires_at the API takes.

export type ExpiryChoice = "never" | "1d" | "7d" | "30d" | "custom";

export const EXPIRY_OPTIONS: { value: ExpiryChoice; label: string }[] = [
  { value: "never", label: "Never" },
  { value: "1d", label: "1 day" },
  { value: "7d", label: "7 days" },
  { value: "30d", label: "30 days" },
  { value: "custom", label: "Until a date…" },
];

export const DEFAULT_EXPIRY: ExpiryChoice = "30d";

const DAY_MS = 24 * 60 * 60 * 1000;
const DAYS: Partial<Record<ExpiryChoice, number>> = { "1d": 1, "7d": 7, "30d": 30 };

export type ResolvedExpiry = { expiresAt: string | null; error?: undefined } | { expiresAt?: undefined; error: string };

/**
 * expires_at for a choice: null for never; now + N days; for a date (YYYY-MM-DD from <input type="date">) the end of
 * that day in the viewer's time zone, so "until Friday" includes Friday.
 */
export function resolveExpiry(choice: ExpiryChoice, customDate: string, now: Date = new Date()): ResolvedExpiry {
  if (choice === "never") return { expiresAt: null };
  const days = DAYS[choice];
  if (days !== undefined) return { expiresAt: new Date(now.getTime() + days * DAY_MS).toISOString() };
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(customDate);
  if (!match) return { error: "Choose the last day the link works" };
  const endOfDay = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + 1);
  if (endOfDay.getTime() <= now.getTime()) return { error: "Choose a day that is not over yet" };
  return { expiresAt: endOfDay.toISOString() };
}

/** Today as YYYY-MM-DD in local time: the earliest day the date input offers. */
export function localDateString(date: Date = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}
