/** Display helpers shared by every page: numbers the way ML engineers read them. */

export function formatNumber(value: number | null | undefined, digits = 4): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (value !== 0 && (Math.abs(value) >= 1e5 || Math.abs(value) < 1e-3)) return value.toExponential(2);
  return Number(value.toPrecision(digits)).toString();
}

export function formatCount(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  if (value >= 1e9) return `${(value / 1e9).toFixed(2)}B`;
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)}M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return String(value);
}

export function formatBytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${size.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  return value >= 1 ? `${value.toFixed(1)} %` : `${value.toPrecision(2)} %`;
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function runDuration(startedAt: string | null, finishedAt: string | null, now = Date.now()): number | null {
  if (!startedAt) return null;
  const end = finishedAt ? Date.parse(finishedAt) : now;
  return (end - Date.parse(startedAt)) / 1000;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** "Mar 10, 2025, 14:05" in the viewer's locale; "—" when there is no date. */
export function formatDateTime(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : "—";
}

/** "just now", "5 min ago", "3 h ago", "2 d ago", "in 6 d": how people read recency; dates a month away in full. */
export function formatRelative(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return "—";
  const seconds = (Date.parse(iso) - now) / 1000;
  const abs = Math.abs(seconds);
  if (abs < 45) return "just now";
  if (abs >= 30 * 86400) return formatDateTime(iso);
  const [value, unit] = abs < 3600 ? [abs / 60, "min"] : abs < 86400 ? [abs / 3600, "h"] : [abs / 86400, "d"];
  const amount = `${Math.max(1, Math.round(value))} ${unit}`;
  return seconds < 0 ? `${amount} ago` : `in ${amount}`;
}

type Progress = {
  current_step: number;
  total_steps: number | null;
  eta_seconds: number | null;
  percent?: number | null;
  /** What the worker reports its process is doing (RunProgress.phase); absent from an older server or a stale row. */
  phase?: string | null;
};

const PHASE_WORDS: Record<string, string> = {
  loading_data: "reading the dataset",
  loading_model: "loading the model",
  evaluating: "evaluating",
  saving: "saving the weights",
  generating: "evaluating by generation",
};

/**
 * A running run's progress in words: its step, then what it is doing where an ETA would mislead. Before the first
 * step the process reads the data, loads the model and evaluates it untrained (minutes on a real model), and after
 * the last one it evaluates, saves and generates: an "ETA 0 s" there read as stuck. The worker reports the phase;
 * without one the step count is all there is to go by.
 */
export function runningProgressText({ current_step, total_steps, eta_seconds, percent, phase }: Progress): string {
  const at = total_steps ? `step ${current_step} / ${total_steps}` : `step ${current_step}`;
  const steps = percent !== null && percent !== undefined ? `${at} · ${percent.toFixed(0)} %` : at;
  if (phase === "evaluating" && current_step === 0) return `${steps} · evaluating the untrained model`;
  if (phase && phase in PHASE_WORDS) return `${steps} · ${PHASE_WORDS[phase]}`;
  if (phase === "training" && current_step === 0) return `${steps} · first step`;
  if (!phase && current_step === 0) return `${steps} · starting (loading the model, first eval)`;
  if (total_steps && current_step >= total_steps) return `${steps} · finishing (eval, save)`;
  return eta_seconds !== null ? `${steps} · ETA ${formatDuration(eta_seconds)}` : steps;
}
