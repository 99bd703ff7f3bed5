// The live log tail: the last bytes first, then only what was appended, every 2 s while the run is active.
import { useEffect, useState } from "react";

import { api, unwrap } from "../../../api/client";

const POLL_MS = 2_000;
const TAIL_BYTES = 64 * 1024;
/** Keep the page light on chatty runs: the view holds at most this many characters of the end of the log. */
const MAX_CHARS = 512 * 1024;

export type LogTail = { text: string; size: number; error: unknown; loaded: boolean };

export function useLogTail(runId: number, active: boolean): LogTail {
  const [state, setState] = useState<LogTail>({ text: "", size: 0, error: null, loaded: false });

  useEffect(() => {
    let offset: number | null = null;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();

    const read = async () => {
      try {
        const chunk = unwrap(
          await api.GET("/api/v1/runs/{run_id}/logs", {
            params: {
              path: { run_id: runId },
              query: offset === null ? { tail_bytes: TAIL_BYTES } : { offset, tail_bytes: TAIL_BYTES },
            },
            signal: controller.signal,
          }),
        );
        if (stopped) return;
        // The first read of this effect (a new run, or the final read when the run ends) replaces the text;
        // a log that shrank was rewritten: start over.
        const replace = offset === null || chunk.size < offset;
        offset = chunk.next_offset;
        setState((prev) => {
          const text = (replace ? chunk.text : prev.text + chunk.text).slice(-MAX_CHARS);
          return text === prev.text && prev.loaded && prev.size === chunk.size
            ? prev
            : { text, size: chunk.size, error: null, loaded: true };
        });
      } catch (error) {
        if (stopped) return;
        setState((prev) => ({ ...prev, error, loaded: true }));
      }
      if (active && !stopped) timer = setTimeout(read, POLL_MS);
    };
    void read();
    return () => {
      stopped = true;
      controller.abort();
      clearTimeout(timer);
    };
  }, [runId, active]);

  return state;
}
