// The project's audit log, newest first: who launched, canceled, shared, revoked and changed members.
import { useInfiniteQuery } from "@tanstack/react-query";

import { Card, EmptyState, ErrorBox, Loading } from "../../../components/ui/ui";
import { formatDateTime, formatRelative } from "../../../lib/format";
import { auditQueryOptions } from "../api/queries";

export function AuditCard({ projectId }: { projectId: number }) {
  const audit = useInfiniteQuery(auditQueryOptions(projectId));
  const events = audit.data?.pages.flatMap((page) => page.data) ?? [];
  const total = audit.data?.pages[0]?.count ?? 0;

  return (
    <Card id="audit" title="Audit log" actions={audit.data && <span className="help">{events.length} of {total} events</span>}>
      {audit.isPending && <Loading what="the audit log" />}
      {audit.error && <ErrorBox error={audit.error} />}
      {audit.data && events.length === 0 && <EmptyState title="Nothing recorded yet" />}
      {events.length > 0 && (
        <table className="audit-table">
          <thead>
            <tr>
              <th>When</th>
              <th>Who</th>
              <th>What</th>
            </tr>
          </thead>
          <tbody>
            {events.map((event) => (
              <tr key={event.id} data-testid="audit-row" data-action={event.action}>
                <td title={formatRelative(event.created_at)}>{formatDateTime(event.created_at)}</td>
                <td>{event.actor_label}</td>
                <td className="audit-summary">
                  {event.summary} <span className="help mono">{event.action}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {audit.hasNextPage && (
        <div className="pager">
          <button type="button" disabled={audit.isFetchingNextPage} onClick={() => void audit.fetchNextPage()}>
            {audit.isFetchingNextPage ? "Loading…" : "Older"}
          </button>
        </div>
      )}
    </Card>
  );
}
