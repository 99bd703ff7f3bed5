// What the playground's event stream says about each completion slot, folded into one state per slot.

export type SlotStatus = "waiting" | "generating" | "done" | "failed";

export type SlotState = {
  status: SlotStatus;
  text: string;
  tokenCount: number;
  firstTokenS: number | null;
  totalS: number | null;
  error: string | null;
  /** The reward run's score of the completion, when the request named one. */
  score: number | null;
  scoreError: string | null;
};

export const STREAM_EVENTS = ["started", "token", "done", "failed", "score", "score_failed", "end"] as const;
export type StreamEvent = (typeof STREAM_EVENTS)[number];

export function initialSlots(count: number): SlotState[] {
  return Array.from({ length: count }, () => ({
    status: "waiting",
    text: "",
    tokenCount: 0,
    firstTokenS: null,
    totalS: null,
    error: null,
    score: null,
    scoreError: null,
  }));
}

type EventData = {
  slot?: number;
  text?: string;
  token_count?: number;
  first_token_s?: number | null;
  total_s?: number;
  message?: string;
  reason?: string;
  score?: number;
};

/** The slots after one event; `end` fails what never finished (the request expired, or the worker gave up). */
export function applyEvent(slots: SlotState[], event: StreamEvent, data: EventData): SlotState[] {
  if (event === "end") {
    return slots.map((slot) =>
      slot.status === "done" || slot.status === "failed"
        ? slot
        : { ...slot, status: "failed", error: data.reason === "expired" ? "The request expired" : "No answer" },
    );
  }
  const index = data.slot;
  if (index === undefined || index < 0 || index >= slots.length) return slots;
  const slot = slots[index];
  let next: SlotState;
  switch (event) {
    case "started":
      next = { ...slot, status: "generating" };
      break;
    case "token":
      next = { ...slot, status: "generating", text: slot.text + (data.text ?? ""), tokenCount: slot.tokenCount + 1 };
      break;
    case "done":
      next = {
        ...slot,
        status: "done",
        // The final text is the whole completion, whatever pieces arrived.
        text: data.text ?? slot.text,
        tokenCount: data.token_count ?? slot.tokenCount,
        firstTokenS: data.first_token_s ?? null,
        totalS: data.total_s ?? null,
      };
      break;
    case "failed":
      next = { ...slot, status: "failed", error: data.message ?? "failed" };
      break;
    case "score":
      next = { ...slot, score: data.score ?? null };
      break;
    case "score_failed":
      next = { ...slot, scoreError: data.message ?? "not scored" };
      break;
  }
  return slots.map((old, i) => (i === index ? next : old));
}

/** "Reward 1.234": the reward model's score of a slot, or why it has none; null when nothing scores it. */
export function scoreLabel(slot: SlotState): string | null {
  if (slot.score !== null) return `Reward ${slot.score.toFixed(3)}`;
  if (slot.scoreError !== null) return `Not scored: ${slot.scoreError}`;
  return null;
}

export function slotStatusLabel(slot: SlotState): string {
  switch (slot.status) {
    case "waiting":
      return "Waiting…";
    case "generating":
      return slot.tokenCount ? `Generating… ${slot.tokenCount} tokens` : "Loading the model…";
    case "done":
      return `${slot.tokenCount} tokens` + (slot.totalS !== null ? ` in ${slot.totalS.toFixed(1)} s` : "");
    case "failed":
      return `Failed: ${slot.error ?? ""}`;
  }
}

/** The prompt as the answer states it: its text, or a row's conversation one turn per line ("user: …"). */
export function promptText(prompt: string | Record<string, string>[]): string {
  return typeof prompt === "string" ? prompt : prompt.map((turn) => `${turn.role}: ${turn.content}`).join("\n");
}
