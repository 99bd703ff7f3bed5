import { useQuery } from "@tanstack/react-query";

import { withShareParam } from "../../../api/client";
import { Card, ErrorBox, Loading } from "../../../components/ui/ui";
import { formatBytes } from "../../../lib/format";
import { runArtifactsQueryOptions } from "../api/queries";

export function ArtifactsCard({ runId }: { runId: number }) {
  const artifacts = useQuery(runArtifactsQueryOptions(runId));
  return (
    <Card title="Artifacts">
      {artifacts.isPending && <Loading what="artifacts" />}
      {artifacts.error && <ErrorBox error={artifacts.error} />}
      {artifacts.data && artifacts.data.data.length === 0 && <p className="help">No artifacts yet.</p>}
      {artifacts.data && artifacts.data.data.length > 0 && (
        <table data-testid="artifacts">
          <thead>
            <tr>
              <th>Path</th>
              <th>Kind</th>
              <th className="num">Size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {artifacts.data.data.map((artifact) => (
              <tr key={artifact.path}>
                <td className="mono">{artifact.path}</td>
                <td>{artifact.kind}</td>
                <td className="num">{formatBytes(artifact.size_bytes)}</td>
                <td>
                  <a href={withShareParam(artifact.download_url)} download>
                    Download
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
