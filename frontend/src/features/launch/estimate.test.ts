import { describe, expect, it } from "vitest";

import { formatCount } from "../../lib/format";
import { breakdownRows, checkpointingEffect, estimateIsStale, peakSummary, sequenceLengthNote, strategyLabel, timeSummary } from "./estimate";
import type { Estimate } from "./estimate";

const MiB = 1024 ** 2;
const estimate = {
  memory: {
    weights_bytes: 100 * MiB,
    reference_weights_bytes: 0,
    gradients_bytes: 50 * MiB,
    optimizer_states_bytes: 100 * MiB,
    activations_bytes: 750 * MiB,
    activations_with_checkpointing_bytes: 250 * MiB,
    activations_without_checkpointing_bytes: 750 * MiB,
  },
} as Estimate;

describe("estimate display", () => {
  it("gives each part its share of the total", () => {
    const rows = breakdownRows(estimate);
    expect(rows.map((r) => r.label)).toEqual(["Weights", "Gradients", "Optimizer states", "Activations"]);
    expect(rows.map((r) => r.share)).toEqual([0.1, 0.05, 0.1, 0.75]);
  });

  it("says what gradient checkpointing saves, whether it is on or off", () => {
    expect(checkpointingEffect(estimate, false)).toContain("would cut activations from 750.0 MiB to 250.0 MiB (saves 500.0 MiB");
    expect(checkpointingEffect(estimate, true)).toContain("is on: activations 250.0 MiB instead of 750.0 MiB");
  });

  it("labels the peak: CUDA's on a GPU, the process's RSS on a CPU with the runtime measured on earlier runs", () => {
    const memory = { ...estimate.memory, model_state_bytes: 250 * MiB, backward_temporaries_bytes: 100 * MiB };
    const cpu = { name: "cpu", kind: "cpu", memory_bytes: 8 * 1024 * MiB };
    const base = { ...estimate, memory, total_per_device_bytes: 1100 * MiB, devices: [{ worker: "w", device: cpu, fits: true }] } as unknown as Estimate;
    expect(breakdownRows(base).map((r) => r.label)).toContain("Backward temporaries");
    const measured = {
      ...base,
      process_peak: { bytes: 1600 * MiB, runtime_bytes: 500 * MiB, based_on_runs: 3, reason: null, allocator_factor: 1, allocator_based_on_runs: 0 },
    } as Estimate;
    expect(peakSummary(measured)).toBe(
      "Process peak (RSS) ≈ 1.6 GiB: the runtime's 500.0 MiB (measured on 3 earlier runs) + this run's 1.1 GiB (model state 250.0 MiB).",
    );
    const slack = { ...measured, process_peak: { ...measured.process_peak, bytes: 2150 * MiB, allocator_factor: 1.5, allocator_based_on_runs: 1 } } as Estimate;
    expect(peakSummary(slack)).toBe(
      "Process peak (RSS) ≈ 2.1 GiB: the runtime's 500.0 MiB (measured on 3 earlier runs) + this run's 1.1 GiB (model state 250.0 MiB) × 1.50, what the allocator held per byte of tensors on 1 earlier run of this model and method.",
    );
    const unmeasured = { ...base, process_peak: { bytes: null, runtime_bytes: null, based_on_runs: 0, reason: "no earlier succeeded run on queue 'cpu'" } } as Estimate;
    expect(peakSummary(unmeasured)).toContain("not measured yet (no earlier succeeded run on queue 'cpu')");
    const gpu = { ...measured, devices: [{ worker: "w", device: { ...cpu, kind: "cuda", name: "H100" }, fits: true }] } as unknown as Estimate;
    expect(peakSummary(gpu)).toBe("CUDA peak ≈ 1.1 GiB per device (model state 250.0 MiB).");
  });

  it("says which sequence length the activations are counted at", () => {
    expect(sequenceLengthNote({ ...estimate.memory, sequence_length: 87, sequence_length_basis: "dataset" })).toBe(
      "Activations are counted for batches of the dataset's longest row, 87 tokens.",
    );
    expect(sequenceLengthNote({ ...estimate.memory, sequence_length: 512, sequence_length_basis: "max_length" })).toContain(
      "at max length, 512 tokens; choose the dataset",
    );
  });

  it("shows a reference model only when the run keeps one", () => {
    const withReference = { ...estimate, memory: { ...estimate.memory, reference_weights_bytes: 250 * MiB } } as Estimate;
    expect(breakdownRows(withReference).map((r) => r.label)).toContain("Reference model");
    expect(breakdownRows(withReference).find((r) => r.label === "Reference model")?.share).toBe(0.2);
  });

  it("names the strategies", () => {
    expect([0, 1, 2, 3].map(strategyLabel)).toEqual(["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"]);
  });

  it("gives a time from earlier runs, or the reason there is none", () => {
    expect(timeSummary({ tokens: 600_000, tokens_per_second: 1000, seconds_per_step_fixed: 0, based_on_runs: 3, seconds: 600, reason: null, tokens_basis: "max_length" })).toBe(
      "Time: at most about 10 min 0 s (every example at max length; choose the dataset for its real lengths — from 3 earlier runs at 1000 tokens/s).",
    );
    expect(timeSummary({ tokens: 75_000, tokens_per_second: 1000, seconds_per_step_fixed: 0, based_on_runs: 1, seconds: 75, reason: null, tokens_basis: "dataset" })).toBe(
      `Time: about 1 min 15 s (${formatCount(75_000)} tokens from the dataset's own lengths, from 1 earlier run at 1000 tokens/s).`,
    );
    expect(
      timeSummary({ tokens: 75_000, tokens_per_second: 1000, seconds_per_step_fixed: 0.7, based_on_runs: 4, seconds: 96, reason: null, tokens_basis: "dataset" }),
    ).toContain("from 4 earlier runs at 1000 tokens/s + 0.70 s per step).");
    expect(timeSummary({ tokens: 1, tokens_per_second: null, seconds_per_step_fixed: 0, based_on_runs: 0, seconds: null, reason: "no earlier run" })).toBe(
      "Time: unknown — no earlier run.",
    );
  });
});

describe("estimateIsStale", () => {
  it("says the figures are stale while a change waits out the debounce or its estimate is on its way", () => {
    const smollm = { model: "smollm2-135m", method: "lora" };
    const tiny = { model: "tunelab-tiny", method: "lora" };
    expect(estimateIsStale(tiny, smollm, false)).toBe(true);
    expect(estimateIsStale(smollm, smollm, true)).toBe(true);
    expect(estimateIsStale(smollm, { ...smollm }, false)).toBe(false);
  });
});
