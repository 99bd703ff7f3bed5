import { describe, expect, it } from "vitest";

import { formatBytes, formatDateTime, formatDuration, formatNumber, formatPercent, formatRelative, runDuration, runningProgressText } from "./format";

describe("format", () => {
  it("shows losses with four significant digits and tiny values in exponent form", () => {
    expect(formatNumber(2.345678)).toBe("2.346");
    expect(formatNumber(0.0000123)).toBe("1.23e-5");
    expect(formatNumber(null)).toBe("—");
  });
  it("shows memory in binary units", () => {
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(3 * 1024 ** 3)).toBe("3.0 GiB");
  });
  it("shows small trainable shares with two significant digits", () => {
    expect(formatPercent(0.123456)).toBe("0.12 %");
    expect(formatPercent(100)).toBe("100.0 %");
  });
  it("measures a run from start to finish, or to now while it runs", () => {
    expect(runDuration("2026-01-01T00:00:00Z", "2026-01-01T00:01:30Z")).toBe(90);
    expect(runDuration("2026-01-01T00:00:00Z", null, Date.parse("2026-01-01T00:00:10Z"))).toBe(10);
    expect(formatDuration(90)).toBe("1 min 30 s");
  });
});

describe("formatRelative", () => {
  const now = Date.parse("2025-03-10T12:00:00Z");
  it("reads recent and coming times the short way", () => {
    expect(formatRelative("2025-03-10T11:59:50Z", now)).toBe("just now");
    expect(formatRelative("2025-03-10T11:55:00Z", now)).toBe("5 min ago");
    expect(formatRelative("2025-03-10T09:00:00Z", now)).toBe("3 h ago");
    expect(formatRelative("2025-03-08T12:00:00Z", now)).toBe("2 d ago");
    expect(formatRelative("2025-03-16T12:00:00Z", now)).toBe("in 6 d");
  });

  it("shows a dash for never and a full date far away", () => {
    expect(formatRelative(null, now)).toBe("—");
    expect(formatRelative("2024-01-01T00:00:00Z", now)).toBe(formatDateTime("2024-01-01T00:00:00Z"));
  });
});

describe("runningProgressText", () => {
  it("says what a running run does where an ETA would mislead: starting before the first step, finishing after the last", () => {
    expect(runningProgressText({ current_step: 0, total_steps: 30, eta_seconds: null, percent: 0 })).toBe("step 0 / 30 · 0 % · starting (loading the model, first eval)");
    expect(runningProgressText({ current_step: 12, total_steps: 30, eta_seconds: 90 })).toBe("step 12 / 30 · ETA 1 min 30 s");
    expect(runningProgressText({ current_step: 30, total_steps: 30, eta_seconds: 0, percent: 100 })).toBe("step 30 / 30 · 100 % · finishing (eval, save)");
    expect(runningProgressText({ current_step: 5, total_steps: null, eta_seconds: null })).toBe("step 5");
  });

  it("says the phase the worker reports where the step count stands still", () => {
    const before = { current_step: 0, total_steps: 30, eta_seconds: null };
    expect(runningProgressText({ ...before, phase: "loading_data" })).toBe("step 0 / 30 · reading the dataset");
    expect(runningProgressText({ ...before, phase: "loading_model" })).toBe("step 0 / 30 · loading the model");
    expect(runningProgressText({ ...before, phase: "evaluating" })).toBe("step 0 / 30 · evaluating the untrained model");
    expect(runningProgressText({ ...before, phase: "training" })).toBe("step 0 / 30 · first step");
    // A mid-run eval is named, not an ETA that stands still while it runs.
    expect(runningProgressText({ current_step: 10, total_steps: 30, eta_seconds: 60, phase: "evaluating" })).toBe("step 10 / 30 · evaluating");
    expect(runningProgressText({ current_step: 12, total_steps: 30, eta_seconds: 90, phase: "training" })).toBe("step 12 / 30 · ETA 1 min 30 s");
    const after = { current_step: 30, total_steps: 30, eta_seconds: 0 };
    expect(runningProgressText({ ...after, phase: "saving" })).toBe("step 30 / 30 · saving the weights");
    expect(runningProgressText({ ...after, phase: "generating" })).toBe("step 30 / 30 · evaluating by generation");
    expect(runningProgressText({ ...after, phase: "training" })).toBe("step 30 / 30 · finishing (eval, save)");
  });
});
