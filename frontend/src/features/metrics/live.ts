// Live metrics of one run over Server-Sent Events, merged into the series read once over REST.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";

import { withShareParam, type Run, type Schemas } from "../../api/client";
import type { paths } from "../../client/schema";
import { mergeLivePoints, type LivePoint, type Series } from "../../lib/series";
import { runKeys } from "../runs";
import { seriesByKey } from "./chartData";
import { metricKeys } from "./api/queries";

// EventSource cannot go through openapi-fetch; the path is still checked against the generated schema.
const EVENTS_PATH: keyof paths = "/api/v1/runs/{run_id}/events";
const MAX_BACKOFF_MS = 30_000;

export function eventsUrl(runId: number, afterSeq: number | null): string {
  const url = EVENTS_PATH.replace("{run_id}", String(runId));
  return afterSeq === null ? url : `${url}?after=${afterSeq}`;
}

export type RunEventHandlers = {
  onPoints: (points: LivePoint[]) => void;
  onStatus?: (run: Run) => void;
  onEnd?: (status: Run["status"]) => void;
};

/**
 * Follow a run's event stream while `enabled`. The browser reconnects by itself with Last-Event-ID and the
 * server replays what was missed; when the stream is closed for good (an error state), it is reopened with
 * ?after=<last seq> after an exponential backoff. After `end` it is closed, so it does not reconnect.
 */
export function useRunEvents(
  runId: number,
  enabled: boolean,
  handlers: RunEventHandlers,
  startAfterSeq: number | null = null,
): void {
  const handlersRef = useRef(handlers);
  handlersRef.current = handlers;
  const startRef = useRef(startAfterSeq);
  startRef.current = startAfterSeq;

  useEffect(() => {
    if (!enabled) return;
    let source: EventSource | null = null;
    // Points up to this flush are already in the REST read: the stream need not replay them.
    let lastSeq: number | null = startRef.current;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let done = false;

    const open = () => {
      // A share link's holder cannot send the X-Share-Token header from an EventSource: the token rides in ?share=.
      const es = new EventSource(withShareParam(eventsUrl(runId, lastSeq)));
      source = es;
      es.addEventListener("open", () => {
        failures = 0;
      });
      es.addEventListener("metrics", (event) => {
        const seq = Number(event.lastEventId);
        if (event.lastEventId !== "" && Number.isFinite(seq)) lastSeq = seq;
        handlersRef.current.onPoints(JSON.parse(event.data) as LivePoint[]);
      });
      es.addEventListener("status", (event) => {
        handlersRef.current.onStatus?.(JSON.parse(event.data) as Run);
      });
      es.addEventListener("end", (event) => {
        done = true;
        es.close();
        handlersRef.current.onEnd?.((JSON.parse(event.data) as { status: Run["status"] }).status);
      });
      es.addEventListener("error", () => {
        if (done || es.readyState !== EventSource.CLOSED) return;
        const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures);
        failures += 1;
        timer = setTimeout(open, delay);
      });
    };
    open();
    return () => {
      done = true;
      clearTimeout(timer);
      source?.close();
    };
  }, [runId, enabled]);
}

type RunMetrics = Schemas["RunMetricsPublic"];

/**
 * The run's series: the REST read (`base`) with live points merged in. Points that arrive before the read are
 * kept and merged when it lands; live batches are applied once per animation frame. On `status` the run's cache
 * entry is replaced; on `end` the run and its series are read once more, and `onEnd` is called.
 */
export function useLiveRunSeries(
  runId: number,
  base: RunMetrics | undefined,
  live: boolean,
  onEnd?: () => void,
  startAfterSeq: number | null = null,
): Record<string, Series> | null {
  const queryClient = useQueryClient();
  const [series, setSeries] = useState<Record<string, Series> | null>(null);
  const pending = useRef<LivePoint[]>([]);
  const loaded = useRef(false);
  const scheduled = useRef(false);

  // Declared before the effect below so that, for a new run, the reset runs before its series are set.
  useEffect(() => {
    loaded.current = false;
    pending.current = [];
    setSeries(null);
  }, [runId]);

  useEffect(() => {
    if (!base) return;
    const batch = pending.current;
    pending.current = [];
    loaded.current = true;
    setSeries(batch.length ? mergeLivePoints(seriesByKey(base.series), batch) : seriesByKey(base.series));
  }, [base]);

  // Once streaming, keep the stream until its `end` even when a status event already says the run finished:
  // the last points and the end's refetch come after that status.
  const [ended, setEnded] = useState<number | null>(null);
  const streamedRun = useRef<number | null>(null);
  if (live) streamedRun.current = runId;
  // A finished run that is resumed is live again: follow it anew, from the flush it had reached.
  const wasLive = useRef(live);
  useEffect(() => {
    if (live && !wasLive.current && ended === runId) setEnded(null);
    wasLive.current = live;
  }, [live, ended, runId]);
  const streaming = streamedRun.current === runId && ended !== runId;

  useRunEvents(
    runId,
    streaming,
    {
      onPoints: (points) => {
        pending.current.push(...points);
        if (!loaded.current || scheduled.current) return;
        scheduled.current = true;
        const flush = () => {
          scheduled.current = false;
          const batch = pending.current;
          pending.current = [];
          if (batch.length) setSeries((prev) => (prev ? mergeLivePoints(prev, batch) : prev));
        };
        if (document.hidden) setTimeout(flush, 250);
        else requestAnimationFrame(flush);
      },
      onStatus: (run) => queryClient.setQueryData(runKeys.detail(runId), run),
      onEnd: () => {
        setEnded(runId);
        void queryClient.invalidateQueries({ queryKey: runKeys.detail(runId) });
        void queryClient.invalidateQueries({ queryKey: metricKeys.runAll(runId) });
        onEnd?.();
      },
    },
    startAfterSeq,
  );

  return series;
}
