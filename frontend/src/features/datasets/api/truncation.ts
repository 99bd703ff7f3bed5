// What a max length cuts from a dataset, in words, from the preview's truncation counts.
import type { Schemas } from "../../../api/client";
import { formatNumber } from "../../../lib/format";

/** One sentence: how many rows training with this max length (SFT) cuts, and how many tokens it drops. */
export function describeTruncation({ rows, truncated_rows, truncated_tokens, max_length }: Schemas["TruncationPublic"]): string {
  if (truncated_rows === 0) return `No row is longer than ${max_length} tokens: nothing is cut.`;
  const share = rows > 0 ? ` (${formatNumber((100 * truncated_rows) / rows, 3)} %)` : "";
  const tokens = truncated_tokens === 1 ? "1 token" : `${truncated_tokens} tokens`;
  return `${truncated_rows} of ${rows} rows${share} are longer than ${max_length} tokens: training cuts them, dropping ${tokens}.`;
}
