import { useLayoutEffect, useRef } from "react";

import { Card, ErrorBox } from "../../../components/ui/ui";
import { formatBytes } from "../../../lib/format";
import { useLogTail } from "../api/logs";

/** The end of the run's log, following it while the run is active; it scrolls along unless the reader scrolled up. */
export function LogTail({ runId, active }: { runId: number; active: boolean }) {
  const { text, size, error, loaded } = useLogTail(runId, active);
  const preRef = useRef<HTMLPreElement>(null);
  const stuck = useRef(true);

  useLayoutEffect(() => {
    const pre = preRef.current;
    if (pre && stuck.current) pre.scrollTop = pre.scrollHeight;
  }, [text]);

  return (
    <Card title="Log" actions={<span className="help">{loaded ? formatBytes(size) : ""}{active ? " · following" : ""}</span>}>
      {error !== null && <ErrorBox error={error} />}
      <pre
        className="log"
        ref={preRef}
        data-testid="log-tail"
        onScroll={(e) => {
          const pre = e.currentTarget;
          stuck.current = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
        }}
      >
        {loaded ? text || "(the log is empty)" : "Loading log…"}
      </pre>
    </Card>
  );
}
