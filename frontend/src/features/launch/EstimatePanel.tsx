// Memory and time of the run the form describes, estimated by the server as the parameters change.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";

import { ApiError } from "../../api/client";
import { Card, ErrorBox } from "../../components/ui/ui";
import { formatBytes, formatCount } from "../../lib/format";
import { estimateQueryOptions } from "./api/estimates";
import type { EstimateRequest } from "./api/estimates";
import {
  breakdownRows,
  checkpointingEffect,
  estimateIsStale,
  peakSummary,
  sequenceLengthNote,
  strategyLabel,
  timeSummary,
} from "./estimate";

const DEBOUNCE_MS = 400;

export function EstimatePanel({ request }: { request: EstimateRequest }) {
  const settled = useDebounced(request, DEBOUNCE_MS);
  const estimate = useQuery(estimateQueryOptions(settled));
  const data = estimate.data;
  // The previous settings' figures stay on screen while new ones come (placeholder data): say so, rather than let
  // another model's memory pass for this one's.
  const stale = data !== undefined && estimateIsStale(settled, request, estimate.isFetching || estimate.isPlaceholderData);

  return (
    <Card title={stale ? "Estimate · updating…" : "Estimate"} testId="estimate-panel">
      {estimate.isError &&
        (estimate.error instanceof ApiError && estimate.error.status === 422 ? (
          <div className="help" role="status">
            No estimate for these settings: {estimate.error.message}
          </div>
        ) : (
          <ErrorBox error={estimate.error} />
        ))}
      {!data && estimate.isPending && <div className="help">Estimating…</div>}
      {data && (
        <div className={stale ? "estimate estimate-stale" : "estimate"} aria-busy={stale} data-testid="estimate-figures">
          {data.warning && (
            <div className="notice" role="alert" data-testid="estimate-warning">
              {data.warning}
            </div>
          )}
          <p>
            <strong>{formatBytes(data.total_per_device_bytes)}</strong> per device
            {data.num_processes > 1 ? ` (${data.num_processes} processes, ${strategyLabel(data.zero_stage)})` : ""} ·{" "}
            {formatCount(data.trainable_params)} of {formatCount(data.total_params)} parameters trained
          </p>
          <table className="estimate-breakdown">
            <tbody>
              {breakdownRows(data).map((row) => (
                <tr key={row.label}>
                  <th>{row.label}</th>
                  <td className="num">{formatBytes(row.bytes)}</td>
                  <td className="num">{(row.share * 100).toFixed(0)} %</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="help" data-testid="estimate-peak">
            {peakSummary(data)}
          </p>
          <p className="help">{sequenceLengthNote(data.memory)}</p>
          <p className="help">
            {checkpointingEffect(data, data.gradient_checkpointing)}
          </p>
          {data.num_processes > 1 && (
            <p className="help">
              Per device:{" "}
              {data.per_device.map((s) => `${strategyLabel(s.zero_stage)} ${formatBytes(s.total_bytes)}`).join(" · ")}
            </p>
          )}
          <p className="help">
            {data.devices.length === 0
              ? `No worker of queue ${data.queue} reports its devices now.`
              : `Queue ${data.queue}: ` +
                data.devices.map((d) => `${d.device.name} (${d.device.kind}, ${formatBytes(d.device.memory_bytes)})${d.fits ? "" : " — too small"}`).join(", ")}
          </p>
          <p className="help">{timeSummary(data.time)}</p>
        </div>
      )}
    </Card>
  );
}

/** `value` once it has stayed the same for `delayMs` (compared by content: the form rebuilds the request each render). */
function useDebounced<T>(value: T, delayMs: number): T {
  const [settled, setSettled] = useState(value);
  const key = JSON.stringify(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(JSON.parse(key) as T), delayMs);
    return () => clearTimeout(timer);
  }, [key, delayMs]);
  return settled;
}
