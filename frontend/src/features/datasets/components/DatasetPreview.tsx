// A dataset's rows as the model sees them, page by page, and its length statistics in characters and, with a model, tokens
// (with how many rows and tokens a max length cuts).
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";

import type { Dataset, Schemas } from "../../../api/client";
import { Card, ErrorBox, Loading } from "../../../components/ui/ui";
import { formatNumber } from "../../../lib/format";
import { PREVIEW_ROWS, datasetPreviewQueryOptions } from "../api/queries";
import { previewPage } from "../api/previewPaging";
import { describeTruncation } from "../api/truncation";

type Props = { dataset: Dataset; models: Schemas["ModelPublic"][] };

// The training default of max_length: what a run cuts at unless it says otherwise.
const DEFAULT_MAX_LENGTH = 256;

export function DatasetPreview({ dataset, models }: Props) {
  const [model, setModel] = useState("");
  const [maxLength, setMaxLength] = useState(DEFAULT_MAX_LENGTH);
  const [offset, setOffset] = useState(0);
  const validMaxLength = Number.isInteger(maxLength) && maxLength > 0 ? maxLength : undefined;
  const preview = useQuery(datasetPreviewQueryOptions(dataset.id, model || undefined, validMaxLength, offset));
  const data = preview.data;
  const page = data ? previewPage(data.offset, data.rows.length, data.total_rows, PREVIEW_ROWS) : null;

  return (
    <Card
      title={`Preview · ${dataset.name}`}
      actions={
        <>
          <label htmlFor="preview-model" className="inline-label">
            Tokenizer
          </label>
          <select id="preview-model" value={model} onChange={(e) => setModel(e.target.value)}>
            <option value="">None (characters only)</option>
            {models.map((m) => (
              <option key={m.name} value={m.name} disabled={!m.available}>
                {m.title}
                {m.available ? "" : " (unavailable)"}
              </option>
            ))}
          </select>
          {model && (
            <>
              <label htmlFor="preview-max-length" className="inline-label">
                Max length
              </label>
              <input
                id="preview-max-length"
                type="number"
                min={1}
                step={1}
                value={Number.isNaN(maxLength) ? "" : maxLength}
                onChange={(e) => setMaxLength(e.target.valueAsNumber)}
              />
            </>
          )}
        </>
      }
    >
      {preview.error && <ErrorBox error={preview.error} />}
      {preview.isPending && <Loading what="preview" />}
      {data && (
        <>
          <div className="grid-2 stats-grid">
            <LengthStats title="Characters" stats={data.char_stats ?? dataset.stats.chars ?? null} />
            {model ? (
              <LengthStats title={`Tokens (${models.find((m) => m.name === model)?.title ?? model})`} stats={data.token_stats ?? null} />
            ) : (
              <div className="help">Choose a tokenizer to see token lengths (p50 / p95 / max).</div>
            )}
          </div>
          {data.truncation && <TruncationNote truncation={data.truncation} />}
          {page && (
            <div className="preview-pager">
              <h3 aria-live="polite">{page.label}</h3>
              <button type="button" className="small" disabled={page.previousOffset === null || preview.isPlaceholderData}
                onClick={() => page.previousOffset !== null && setOffset(page.previousOffset)}>
                Previous
              </button>
              <button type="button" className="small" disabled={page.nextOffset === null || preview.isPlaceholderData}
                onClick={() => page.nextOffset !== null && setOffset(page.nextOffset)}>
                Next
              </button>
            </div>
          )}
          <ol className="preview-rows">
            {data.rows.map((row) => (
              <PreviewRow key={row.line} row={row} />
            ))}
          </ol>
        </>
      )}
    </Card>
  );
}

/** What training with this max length (SFT) cuts: the rows longer than it and the tokens past it. */
function TruncationNote({ truncation }: { truncation: Schemas["TruncationPublic"] }) {
  const cuts = truncation.truncated_rows > 0;
  return (
    <div className={cuts ? "help truncation warning" : "help truncation"} role="status">
      {describeTruncation(truncation)}
    </div>
  );
}

function LengthStats({ title, stats }: { title: string; stats: Schemas["LengthStats"] | null }) {
  return (
    <div>
      <h3>{title}</h3>
      {stats ? (
        <div className="stat-row">
          {(["p50", "p95", "max", "mean", "min"] as const).map((key) => (
            <div className="stat" key={key}>
              <span className="value">{formatNumber(stats[key], 4)}</span>
              <span className="label">{key}</span>
            </div>
          ))}
          <div className="stat">
            <span className="value">{stats.count}</span>
            <span className="label">rows</span>
          </div>
        </div>
      ) : (
        <div className="help">Not available.</div>
      )}
    </div>
  );
}

function PreviewRow({ row }: { row: Schemas["RenderedRow"] }) {
  const hasPair = row.prompt != null || row.completion != null;
  return (
    <li className="preview-row">
      <div className="help">line {row.line}</div>
      {hasPair && (
        <div className={row.rejected != null ? "grid-3" : "grid-2"}>
          <Segment label="Prompt" text={row.prompt} />
          <Segment label={completionLabel(row)} text={row.completion} />
          {row.rejected != null && <Segment label="Rejected" text={row.rejected} />}
        </div>
      )}
      {!hasPair && row.text != null && <Segment label="Text" text={row.text} />}
      {!hasPair && row.text == null && <Segment label="Raw (choose a tokenizer to render the chat template)" text={JSON.stringify(row.raw, null, 2)} />}
    </li>
  );
}

function completionLabel(row: Schemas["RenderedRow"]): string {
  if (row.rejected != null) return "Chosen";
  if (row.label != null) return row.label ? "Completion (desirable)" : "Completion (undesirable)";
  return "Completion";
}

function Segment({ label, text }: { label: string; text?: string | null }) {
  return (
    <div className="segment">
      <div className="segment-label">{label}</div>
      <pre>{text ?? "—"}</pre>
    </div>
  );
}
