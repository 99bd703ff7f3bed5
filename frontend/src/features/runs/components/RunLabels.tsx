// A run's name, tags and notes on its page: shown to everyone, edited in place by its project's editors.
import { useState } from "react";

import type { Run } from "../../../api/client";
import { ErrorBox } from "../../../components/ui/ui";
import { useUpdateRun } from "../api/mutations";
import { splitTags } from "./BulkActions";

export function RunLabels({ run, canEdit }: { run: Run; canEdit: boolean }) {
  const [editing, setEditing] = useState(false);
  const tags = run.tags ?? [];
  if (editing) return <RunLabelsForm run={run} onDone={() => setEditing(false)} />;
  return (
    <div className="run-labels">
      {tags.length > 0 && (
        <span className="tag-chips" role="list" aria-label="Tags">
          {tags.map((tag) => (
            <span key={tag} className="tag-chip" role="listitem">
              {tag}
            </span>
          ))}
        </span>
      )}
      {run.notes && (
        <p className="run-notes">
          {run.notes}
        </p>
      )}
      {canEdit && (
        <button type="button" className="small" onClick={() => setEditing(true)}>
          {tags.length || run.notes ? "Edit name, tags, notes" : "Rename, tag, add notes"}
        </button>
      )}
    </div>
  );
}

function RunLabelsForm({ run, onDone }: { run: Run; onDone: () => void }) {
  const update = useUpdateRun();
  const [name, setName] = useState(run.name);
  const [tagText, setTagText] = useState((run.tags ?? []).join(", "));
  const [notes, setNotes] = useState(run.notes ?? "");
  const errors = update.error && "fieldErrors" in update.error ? (update.error as { fieldErrors: () => Record<string, string> }).fieldErrors() : {};
  return (
    <form
      className="run-labels-form"
      data-testid="run-labels-form"
      onSubmit={(e) => {
        e.preventDefault();
        update.mutate({ runId: run.id, body: { name, tags: splitTags(tagText), notes } }, { onSuccess: onDone });
      }}
    >
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} required data-testid="run-name-input" />
      </label>
      <label>
        Tags <span className="help">comma-separated, at most 20</span>
        <input value={tagText} onChange={(e) => setTagText(e.target.value)} />
      </label>
      <label>
        Notes
        <textarea value={notes} onChange={(e) => setNotes(e.target.value)} rows={3} />
      </label>
      {update.error && Object.keys(errors).length === 0 && <ErrorBox error={update.error} />}
      {Object.entries(errors).map(([field, message]) => (
        <p key={field} className="field-error" role="alert">
          {field}: {message}
        </p>
      ))}
      <div className="card-actions">
        <button type="submit" className="primary" disabled={update.isPending}>
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
