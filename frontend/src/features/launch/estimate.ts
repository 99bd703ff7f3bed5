// What the launch form says about an estimate: the memory breakdown as rows, the effect of gradient checkpointing, time.
import type { Schemas } from "../../api/client";
import { formatBytes, formatCount, formatDuration } from "../../lib/format";

export type Estimate = Schemas["EstimatePublic"];

export type BreakdownRow = { label: string; bytes: number; share: number };

/** Weights (and a reference model's), gradients, optimizer states and activations, each with its share of the total per device (ZeRO off). */
export function breakdownRows(estimate: Estimate): BreakdownRow[] {
  const { memory } = estimate;
  const parts: [string, number][] = [
    ["Weights", memory.weights_bytes],
    ...(memory.reference_weights_bytes > 0 ? ([["Reference model", memory.reference_weights_bytes]] as [string, number][]) : []),
    ["Gradients", memory.gradients_bytes],
    ["Optimizer states", memory.optimizer_states_bytes],
    ["Activations", memory.activations_bytes],
    ...(memory.backward_temporaries_bytes > 0 ? ([["Backward temporaries", memory.backward_temporaries_bytes]] as [string, number][]) : []),
  ];
  const total = parts.reduce((sum, [, bytes]) => sum + bytes, 0);
  return parts.map(([label, bytes]) => ({ label, bytes, share: total > 0 ? bytes / total : 0 }));
}

/** "Gradient checkpointing saves 3.2 GiB of activations" — or what turning it on would save. */
export function checkpointingEffect(estimate: Estimate, enabled: boolean): string {
  const { activations_with_checkpointing_bytes: on, activations_without_checkpointing_bytes: off } = estimate.memory;
  const saved = formatBytes(Math.max(0, off - on));
  return enabled
    ? `Gradient checkpointing is on: activations ${formatBytes(on)} instead of ${formatBytes(off)} (saves ${saved}, about a third slower).`
    : `Gradient checkpointing would cut activations from ${formatBytes(off)} to ${formatBytes(on)} (saves ${saved}, about a third slower).`;
}

/**
 * What the total is a peak of, labelled: on a GPU the CUDA peak (the runtime lives in host memory), on a CPU the
 * process's resident peak, which adds the runtime's own memory measured on the queue's earlier runs.
 */
export function peakSummary(estimate: Estimate): string {
  const onGpu = estimate.devices.some((d) => d.device.kind === "cuda");
  const state = `model state ${formatBytes(estimate.memory.model_state_bytes)}`;
  if (onGpu) return `CUDA peak ≈ ${formatBytes(estimate.total_per_device_bytes)} per device (${state}).`;
  const peak = estimate.process_peak;
  if (peak.bytes === null || peak.runtime_bytes === null) {
    return `Process peak (RSS): this run's ${formatBytes(estimate.total_per_device_bytes)} plus the runtime's own memory, not measured yet (${peak.reason ?? "no earlier run"}).`;
  }
  const runs = (count: number) => `${count} earlier ${count === 1 ? "run" : "runs"}`;
  const held = `this run's ${formatBytes(estimate.total_per_device_bytes)} (${state})`;
  const allocator =
    peak.allocator_based_on_runs > 0
      ? ` × ${peak.allocator_factor.toFixed(2)}, what the allocator held per byte of tensors on ${runs(peak.allocator_based_on_runs)} of this model and method`
      : "";
  return `Process peak (RSS) ≈ ${formatBytes(peak.bytes)}: the runtime's ${formatBytes(peak.runtime_bytes)} (measured on ${runs(peak.based_on_runs)}) + ${held}${allocator}.`;
}

/** What sequence length the activations are counted at: the chosen dataset's longest row, or max_length. */
export function sequenceLengthNote(memory: Estimate["memory"]): string {
  return memory.sequence_length_basis === "dataset"
    ? `Activations are counted for batches of the dataset's longest row, ${memory.sequence_length} tokens.`
    : `Activations are counted for batches at max length, ${memory.sequence_length} tokens; choose the dataset to count its longest row.`;
}

export function strategyLabel(zeroStage: number): string {
  return zeroStage === 0 ? "DDP" : `ZeRO-${zeroStage}`;
}

/** "about 12 min (the dataset's 1.2M tokens, from 3 earlier runs at 250 tokens/s + 0.70 s per step)", "at most about …"
 * when every example is counted at max_length (no dataset chosen), or why there is no estimate. The fixed part per step
 * (the optimizer's update) is there when earlier runs with different tokens per step told it apart. */
export function timeSummary(time: Estimate["time"]): string {
  if (time.seconds === null || time.seconds === undefined || !time.tokens_per_second) return `Time: unknown — ${time.reason ?? "no measurement"}.`;
  const runs = time.based_on_runs === 1 ? "1 earlier run" : `${time.based_on_runs} earlier runs`;
  const fixed = time.seconds_per_step_fixed > 0 ? ` + ${time.seconds_per_step_fixed.toFixed(2)} s per step` : "";
  const measured = `from ${runs} at ${Math.round(time.tokens_per_second)} tokens/s${fixed}`;
  if (time.tokens_basis === "dataset" && time.tokens) {
    return `Time: about ${formatDuration(time.seconds)} (${formatCount(time.tokens)} tokens from the dataset's own lengths, ${measured}).`;
  }
  return `Time: at most about ${formatDuration(time.seconds)} (every example at max length; choose the dataset for its real lengths — ${measured}).`;
}

/** Whether the figures shown are not yet those of the form's settings: a change is waiting out the debounce, or its
 * estimate is on its way while the previous one stays on screen. */
export function estimateIsStale(shownFor: unknown, current: unknown, fetching: boolean): boolean {
  return fetching || JSON.stringify(shownFor) !== JSON.stringify(current);
}
