import type { Run } from "../../../api/client";
import { Card } from "../../../components/ui/ui";
import { formatConfigValue } from "../config";

function datasetLabel(dataset: unknown): string {
  if (dataset && typeof dataset === "object") {
    const d = dataset as { id?: number; name?: string; rows?: number; format?: string };
    return [d.name ?? (d.id !== undefined ? `#${d.id}` : ""), d.format, d.rows !== undefined ? `${d.rows} rows` : ""]
      .filter(Boolean)
      .join(" · ");
  }
  return formatConfigValue(dataset);
}

/** The resolved config a run trained with, and what reproduces it. */
export function ConfigCard({ run }: { run: Run }) {
  const config = run.config as { params?: Record<string, unknown>; dataset?: unknown };
  const params = Object.entries(config.params ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const facts: [string, string][] = [
    ["objective", run.objective],
    ["method", run.method],
    ["model", run.model],
    ["dataset", config.dataset !== undefined ? datasetLabel(config.dataset) : "—"],
    ["dataset hash", run.dataset_hash ? run.dataset_hash.slice(0, 12) : "—"],
    ["seed", String(run.seed)],
    ...Object.entries(run.versions ?? {}).map(([name, version]): [string, string] => [name, formatConfigValue(version)]),
  ];
  return (
    <Card title="Config">
      <div className="grid-2 config-grid">
        <table className="kv">
          <tbody>
            {facts.map(([name, value]) => (
              <tr key={name}>
                <th scope="row">{name}</th>
                <td>{value}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <table className="kv">
          <tbody>
            {params.length === 0 && (
              <tr>
                <td className="help">No parameters</td>
              </tr>
            )}
            {params.map(([name, value]) => (
              <tr key={name} data-field={`params.${name}`}>
                <th scope="row">{name}</th>
                <td className="mono">{formatConfigValue(value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
