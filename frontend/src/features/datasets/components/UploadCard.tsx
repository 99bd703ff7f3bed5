// Dataset upload: drop a file on the zone or pick it with the file input; the server validates every row.
import { useState } from "react";
import type { DragEvent } from "react";

import type { Dataset, Schemas } from "../../../api/client";
import { Card } from "../../../components/ui/ui";
import { formatBytes } from "../../../lib/format";
import { useUploadDataset } from "../api/mutations";
import { describeUploadError } from "../api/uploadErrors";

const FORMATS: Schemas["DatasetFormat"][] = ["text", "instruction", "chat", "preference", "feedback", "prompt"];

export function UploadCard({ projectId, onUploaded }: { projectId: number | undefined; onUploaded: (dataset: Dataset) => void }) {
  const upload = useUploadDataset();
  const [name, setName] = useState("");
  const [format, setFormat] = useState<Schemas["DatasetFormat"] | "">("");
  const [dragging, setDragging] = useState(false);
  const [file, setFile] = useState<File | null>(null);

  const start = (chosen: File) => {
    setFile(chosen);
    upload.mutate(
      { file: chosen, name: name.trim() || undefined, format: format || undefined, projectId },
      {
        onSuccess: (dataset) => {
          setName("");
          onUploaded(dataset);
        },
      },
    );
  };

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    const dropped = event.dataTransfer.files[0];
    if (dropped && !upload.isPending) start(dropped);
  };

  const problem = upload.error ? describeUploadError(upload.error) : null;

  return (
    <Card title="Upload a dataset">
      <div className="upload-options">
        <div className="field">
          <label htmlFor="dataset-name">Name</label>
          <input id="dataset-name" name="name" type="text" value={name} placeholder="file name" onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="dataset-format">Format</label>
          <select id="dataset-format" name="format" value={format} onChange={(e) => setFormat(e.target.value as Schemas["DatasetFormat"] | "")}>
            <option value="">Auto-detect</option>
            {FORMATS.map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </select>
        </div>
      </div>
      <div
        className={`drop-zone${dragging ? " dragging" : ""}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <p>
          Drop a JSONL file (one row per line: <code>text</code>, <code>instruction</code>/<code>output</code>,{" "}
          <code>messages</code>, <code>prompt</code>/<code>chosen</code>/<code>rejected</code> or{" "}
          <code>prompt</code>/<code>completion</code>/<code>label</code>) or a CSV file (a
          header row naming those fields; <code>messages</code> as JSON in its cell) here, or choose one:
        </p>
        <input
          id="dataset-file"
          type="file"
          aria-label="Dataset file"
          disabled={upload.isPending}
          onChange={(e) => {
            const chosen = e.target.files?.[0];
            e.target.value = "";
            if (chosen) start(chosen);
          }}
        />
      </div>

      <div aria-live="polite">
        {upload.isPending && file && (
          <div className="loading">
            Uploading {file.name} ({formatBytes(file.size)})…
          </div>
        )}
        {upload.isSuccess && (
          <div className="upload-ok">
            Uploaded <strong>{upload.data.name}</strong>: {upload.data.row_count} rows, {upload.data.format}.
          </div>
        )}
      </div>
      {problem && (
        <div className="error-box" role="alert">
          {problem.lines.length === 0 ? (
            problem.message
          ) : (
            <>
              <div>{file ? `${file.name} was not accepted:` : "The file was not accepted:"}</div>
              <ul className="upload-errors">
                {problem.lines.map((line, index) => (
                  <li key={index}>{line}</li>
                ))}
              </ul>
              {problem.more > 0 && <div>… and {problem.more} more</div>}
            </>
          )}
          {file && (
            <button type="button" className="small retry" onClick={() => start(file)}>
              Upload {file.name} again
            </button>
          )}
        </div>
      )}
    </Card>
  );
}
