import { useState, type FormEvent } from "react";

import type { Schemas } from "../../../api/client";
import { formErrors } from "../../../api/formErrors";
import { ErrorBox, Field, fieldProps } from "../../../components/ui/ui";
import { useCreateProject } from "../api/mutations";

/** Start a project (you become its owner); `onCreated` gets it, e.g. to switch to it. */
export function CreateProjectForm({ onCreated, autoFocus = false }: { onCreated: (project: Schemas["ProjectPublic"]) => void; autoFocus?: boolean }) {
  const create = useCreateProject();
  const [name, setName] = useState("");
  const errors = formErrors(create.error, { name: "project_name" });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    create.mutate(
      { name: name.trim() },
      {
        onSuccess: (project) => {
          setName("");
          onCreated(project);
        },
      },
    );
  };

  return (
    <form className="inline-form" onSubmit={submit} noValidate>
      <Field name="project_name" label="Project name" error={errors.fields.project_name} help="Unique on this Tunelab; you become its owner">
        <input
          {...fieldProps("project_name", errors.fields.project_name)}
          type="text"
          value={name}
          placeholder="e.g. llama-sft-ablations"
          autoFocus={autoFocus}
          onChange={(e) => setName(e.target.value)}
        />
      </Field>
      <button type="submit" className="primary" disabled={create.isPending || !name.trim()}>
        Create project
      </button>
      {errors.form && <ErrorBox error={errors.form} />}
    </form>
  );
}
