import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";

import { EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { canEdit } from "../features/auth/roles";
import { useSession } from "../features/auth/session";
import { studiesQueryOptions } from "../features/studies";
import { formatDateTime } from "../lib/format";

export function StudiesPage() {
  const session = useSession();
  const studies = useQuery(studiesQueryOptions(session.projectId));
  return (
    <>
      <div className="page-title">
        <h1>Studies</h1>
        {canEdit(session.roleIn(session.projectId)) && (
          <Link className="button primary" to="/studies/new">
            New study
          </Link>
        )}
      </div>
      {studies.isPending && <Loading what="studies" />}
      {studies.error && <ErrorBox error={studies.error} />}
      {studies.data && studies.data.data.length === 0 && (
        <EmptyState title="No studies yet">
          <p>A study launches several methods with a matched budget and compares them fairly.</p>
        </EmptyState>
      )}
      {studies.data && studies.data.data.length > 0 && (
        <table className="table" data-testid="studies-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Methods</th>
              <th>Runs</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {studies.data.data.map((study) => (
              <tr key={study.id}>
                <td>
                  <Link to={`/studies/${study.id}`}>{study.name}</Link>
                </td>
                <td>{study.spec.methods.join(", ")}</td>
                <td>
                  {study.run_count}
                  {Object.entries(study.status_counts).map(([status, count]) => (
                    <span key={status} className="help"> · {count} {status}</span>
                  ))}
                </td>
                <td>{formatDateTime(study.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
