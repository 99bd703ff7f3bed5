/** The metric keys the trainer logs, in the order the pages show them. */
export const RUN_CHART_KEYS = [
  "train/loss",
  "eval/loss",
  "train/learning_rate",
  "train/grad_norm",
  "train/tokens_per_second",
] as const;

const ORDER = [
  ...RUN_CHART_KEYS,
  "eval/perplexity",
  "train/mean_token_accuracy",
  "eval/mean_token_accuracy",
  // Preference objectives (DPO, ORPO): how far chosen answers beat rejected ones first.
  "eval/rewards/margins",
  "train/rewards/margins",
  "eval/rewards/accuracies",
  "train/rewards/accuracies",
  "train/rewards/chosen",
  "train/rewards/rejected",
  "train/epoch",
  "system/cpu_percent",
  "system/rss_bytes",
  "system/gpu_utilization_percent",
  "system/gpu_memory_bytes",
];

// Evaluations are a few points far apart, and schedules (learning rate, epoch) are exact by construction:
// an EMA over either only shifts the line away from the truth, so only per-step training signals are smoothed.
const UNSMOOTHED = new Set(["train/learning_rate", "train/epoch"]);

/** The training process's resource use over time (CPU, memory, GPU), charted apart from the training metrics. */
export const SYSTEM_KEY_PREFIX = "system/";

export function isSystemKey(key: string): boolean {
  return key.startsWith(SYSTEM_KEY_PREFIX);
}

/** Whether the smoothing slider applies to this metric's chart. */
export function isSmoothable(key: string): boolean {
  // System figures are sparse samples (every few seconds), read for their actual level: like evaluations, unsmoothed.
  return !key.startsWith("eval/") && !isSystemKey(key) && !UNSMOOTHED.has(key);
}

/** Keys that serve as an axis rather than a chart. */
export const AXIS_KEYS = new Set(["train/tokens_seen"]);

export const METRIC_TITLES: Record<string, string> = {
  "train/loss": "Train loss",
  "eval/loss": "Eval loss",
  "train/learning_rate": "Learning rate",
  "train/grad_norm": "Gradient norm",
  "train/tokens_per_second": "Tokens / s",
  "eval/perplexity": "Eval perplexity",
  "train/mean_token_accuracy": "Train token accuracy",
  "eval/mean_token_accuracy": "Eval token accuracy",
  "train/epoch": "Epoch",
  "train/rewards/margins": "Train reward margin (chosen − rejected)",
  "eval/rewards/margins": "Eval reward margin (chosen − rejected)",
  "train/rewards/accuracies": "Train reward accuracy (chosen wins)",
  "eval/rewards/accuracies": "Eval reward accuracy (chosen wins)",
  "train/rewards/chosen": "Train reward of chosen",
  "train/rewards/rejected": "Train reward of rejected",
  "eval/rewards/chosen": "Eval reward of chosen",
  "eval/rewards/rejected": "Eval reward of rejected",
  "train/logps/chosen": "Train log-prob of chosen",
  "train/logps/rejected": "Train log-prob of rejected",
  "eval/logps/chosen": "Eval log-prob of chosen",
  "eval/logps/rejected": "Eval log-prob of rejected",
  "train/nll_loss": "Train NLL of chosen (ORPO)",
  "eval/nll_loss": "Eval NLL of chosen (ORPO)",
  "train/log_odds_ratio": "Train log odds ratio (ORPO)",
  "eval/log_odds_ratio": "Eval log odds ratio (ORPO)",
  "system/cpu_percent": "CPU (% of one core)",
  "system/rss_bytes": "Process memory (resident)",
  "system/gpu_utilization_percent": "GPU utilisation (%)",
  "system/gpu_memory_bytes": "GPU memory allocated",
};

/** Known keys first in their usual order, then any others alphabetically. */
export function sortMetricKeys(keys: Iterable<string>): string[] {
  const rank = (key: string) => {
    const i = ORDER.indexOf(key);
    return i === -1 ? ORDER.length : i;
  };
  return [...new Set(keys)].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}
