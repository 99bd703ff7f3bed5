import { useQuery } from "@tanstack/react-query";

import { withShareParam } from "../../../api/client";
import { Card, ErrorBox, Loading } from "../../../components/ui/ui";
import { formatBytes } from "../../../lib/format";
import { runArtifactsQueryOptions } from "../api/queries";

// One zip per folder a model loads from: the adapter (with the tokenizer), a full fine-tuning's model, a merged export.
const ARCHIVE_LABELS: Record<string, string> = {
  adapter: "Download adapter (.zip)",
  model: "Download model (.zip)",
  merged: "Download merged model (.zip)",
};

export function ArtifactsCard({ runId }: { runId: number }) {
  const artifacts = useQuery(runArtifactsQueryOptions(runId));
  const archives = artifacts.data?.archives ?? [];
  return (
    <Card
      title="Artifacts"
      actions={
        archives.length > 0 && (
          <span className="archive-links">
            {archives.map((archive) => (
              <a key={archive.folder} className="button" href={withShareParam(archive.download_url)} download>
                {ARCHIVE_LABELS[archive.folder] ?? `Download ${archive.folder} (.zip)`}
              </a>
            ))}
          </span>
        )
      }
    >
      {artifacts.isPending && <Loading what="artifacts" />}
      {artifacts.error && <ErrorBox error={artifacts.error} />}
      {artifacts.data && artifacts.data.data.length === 0 && <p className="help">No artifacts yet.</p>}
      {artifacts.data && artifacts.data.data.length > 0 && (
        <div className="table-scroll">
          <table>
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
        </div>
      )}
    </Card>
  );
}
