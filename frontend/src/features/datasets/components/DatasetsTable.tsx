// The dataset list; choosing a row shows its preview (the name is a button, so the keyboard can choose too).
import type { Dataset } from "../../../api/client";
import { formatBytes, formatCount } from "../../../lib/format";

const dateTime = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

export function DatasetsTable({ datasets, selectedId, onSelect }: { datasets: Dataset[]; selectedId?: number; onSelect: (id: number) => void }) {
  return (
    <div className="table-scroll">
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Format</th>
            <th className="num">Rows</th>
            <th className="num">Size</th>
            <th>Hash</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {datasets.map((dataset) => (
            <tr
              key={dataset.id}
              data-dataset-id={dataset.id}
              className={`clickable${dataset.id === selectedId ? " selected" : ""}`}
              onClick={() => onSelect(dataset.id)}
            >
              <td>
                <button type="button" className="link-button" aria-pressed={dataset.id === selectedId}>
                  {dataset.name}
                </button>
                {dataset.bundled && <span className="badge badge-bundled">bundled</span>}
              </td>
              <td>{dataset.format}</td>
              <td className="num">{formatCount(dataset.row_count)}</td>
              <td className="num">{formatBytes(dataset.size_bytes)}</td>
              <td>
                <code title={dataset.content_hash}>{dataset.content_hash.slice(0, 12)}</code>
              </td>
              <td title={dataset.created_at}>{dateTime.format(new Date(dataset.created_at))}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
