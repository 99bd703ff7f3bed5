import { describe, expect, it } from "vitest";

import { applyEvent, initialSlots, promptText, scoreLabel, slotStatusLabel } from "./stream";

describe("applyEvent", () => {
  it("fills a slot token by token and keeps the final text", () => {
    let slots = initialSlots(2);
    slots = applyEvent(slots, "started", { slot: 1 });
    slots = applyEvent(slots, "token", { slot: 1, text: "He" });
    slots = applyEvent(slots, "token", { slot: 1, text: "llo" });
    expect(slots[1]).toMatchObject({ status: "generating", text: "Hello", tokenCount: 2 });
    expect(slots[0].status).toBe("waiting");
    slots = applyEvent(slots, "done", { slot: 1, text: "Hello", token_count: 3, first_token_s: 0.1, total_s: 0.5 });
    expect(slots[1]).toMatchObject({ status: "done", text: "Hello", tokenCount: 3, totalS: 0.5 });
    expect(slotStatusLabel(slots[1])).toBe("3 tokens in 0.5 s");
  });

  it("fails one slot with its reason and, at the end, every slot still open", () => {
    let slots = applyEvent(initialSlots(3), "failed", { slot: 0, message: "OSError: gone" });
    slots = applyEvent(slots, "done", { slot: 1, text: "x", token_count: 1 });
    slots = applyEvent(slots, "end", { reason: "expired" });
    expect(slots.map((s) => s.status)).toEqual(["failed", "done", "failed"]);
    expect(slots[0].error).toBe("OSError: gone");
    expect(slots[2].error).toBe("The request expired");
  });

  it("ignores events of slots it does not have", () => {
    const slots = initialSlots(1);
    expect(applyEvent(slots, "token", { slot: 4, text: "x" })).toBe(slots);
    expect(applyEvent(slots, "token", {})).toBe(slots);
  });
});

describe("promptText", () => {
  it("shows a prompt as sent, and a dataset row's conversation one turn per line", () => {
    expect(promptText("What is 2 plus 3?")).toBe("What is 2 plus 3?");
    expect(promptText([{ role: "system", content: "Be brief." }, { role: "user", content: "Add 2 and 3." }])).toBe("system: Be brief.\nuser: Add 2 and 3.");
  });

  it("keeps each slot's reward score, or why it has none, after its completion", () => {
    let slots = applyEvent(initialSlots(2), "done", { slot: 0, text: "4", token_count: 1 });
    expect(scoreLabel(slots[0])).toBeNull();
    slots = applyEvent(slots, "score", { slot: 0, score: -0.12345 });
    slots = applyEvent(slots, "score_failed", { slot: 1, message: "OSError: weights gone" });
    expect(scoreLabel(slots[0])).toBe("Reward -0.123");
    expect(scoreLabel(slots[1])).toBe("Not scored: OSError: weights gone");
  });
});
