// The project itself, for its owners: rename it, or delete it with everything in it.
import { useState, type FormEvent } from "react";
import { useNavigate } from "react-router";

import { formErrors } from "../../../api/formErrors";
import { Card, ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { useDeleteProject, useRenameProject } from "../api/mutations";

export function ProjectCard({ projectId, name }: { projectId: number; name: string }) {
  const navigate = useNavigate();
  const rename = useRenameProject(projectId);
  const remove = useDeleteProject(projectId);
  const [newName, setNewName] = useState(name);
  const [confirmation, setConfirmation] = useState("");
  const renameErrors = formErrors(rename.error, { name: "rename_project" });

  const submitRename = (event: FormEvent) => {
    event.preventDefault();
    if (!rename.isPending && newName.trim() !== name) rename.mutate(newName.trim());
  };
  const submitDelete = (event: FormEvent) => {
    event.preventDefault();
    if (!remove.isPending && confirmation === name) remove.mutate(undefined, { onSuccess: () => navigate("/", { replace: true }) });
  };

  return (
    <Card id="project" title="Project">
      <form className="inline-form" onSubmit={submitRename} noValidate>
        <div className="inline-fields">
          <Field name="rename_project" label="Name" error={renameErrors.fields.rename_project} help="Unique on this Tunelab">
            <input {...fieldProps("rename_project", renameErrors.fields.rename_project)} type="text" value={newName} maxLength={100} onChange={(e) => setNewName(e.target.value)} />
          </Field>
          <button type="submit" disabled={rename.isPending || !newName.trim() || newName.trim() === name}>
            Rename
          </button>
        </div>
        {renameErrors.form && <ErrorBox error={renameErrors.form} />}
      </form>

      <form className="danger-zone" onSubmit={submitDelete} noValidate>
        <h3>Delete this project</h3>
        <p className="help">
          Deletes its runs with their metrics and artifacts, its datasets and its share links, for every member. It cannot be undone,
          and it is refused while any of its runs is queued or running.
        </p>
        <div className="inline-fields">
          <Field name="confirm_delete" label={<>Type <strong className="mono">{name}</strong> to confirm</>}>
            <input {...fieldProps("confirm_delete")} type="text" value={confirmation} autoComplete="off" onChange={(e) => setConfirmation(e.target.value)} />
          </Field>
          <button type="submit" className="danger" disabled={remove.isPending || confirmation !== name}>
            {remove.isPending ? "Deleting…" : "Delete project"}
          </button>
        </div>
        {remove.error && <ErrorBox error={remove.error} />}
      </form>
    </Card>
  );
}
