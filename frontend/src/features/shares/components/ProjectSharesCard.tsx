import { useQuery } from "@tanstack/react-query";
import { useState } from "react";

import { Card, EmptyState, ErrorBox, Loading } from "../../../components/ui/ui";
import { projectSharesQueryOptions } from "../api/queries";
import { SharesTable } from "./SharesTable";

/** Every share link of a project, for its editors and owners: who made it, whether it is used, Revoke. */
export function ProjectSharesCard({ projectId }: { projectId: number }) {
  const [includeInactive, setIncludeInactive] = useState(false);
  const shares = useQuery(projectSharesQueryOptions(projectId, includeInactive));
  return (
    <Card
      id="share-links"
      title="Share links"
      actions={
        <label className="checkbox-label">
          <input type="checkbox" name="include_inactive" checked={includeInactive} onChange={(e) => setIncludeInactive(e.target.checked)} />
          Show revoked and expired
        </label>
      }
    >
      {shares.isPending && <Loading what="share links" />}
      {shares.error && <ErrorBox error={shares.error} />}
      {shares.data && shares.data.data.length === 0 && (
        <EmptyState title="No share links yet">
          <p className="help">Make one with Share on a run's page or on a comparison.</p>
        </EmptyState>
      )}
      {shares.data && shares.data.data.length > 0 && <SharesTable shares={shares.data.data} linkRuns />}
    </Card>
  );
}
