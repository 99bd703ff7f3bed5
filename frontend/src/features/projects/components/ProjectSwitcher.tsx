import { useState } from "react";

import { Modal } from "../../../components/ui/ui";
import { useSession } from "../../auth";
import { CreateProjectForm } from "./CreateProjectForm";

/** The project every page works in: its runs, its datasets, where new runs and uploads go. */
export function ProjectSwitcher() {
  const { me, projectId, role, setProjectId } = useSession();
  const [creating, setCreating] = useState(false);
  return (
    <div className="project-switcher">
      <label htmlFor="project-switcher" className="topbar-label">
        Project
      </label>
      <select
        id="project-switcher"
        value={projectId ?? ""}
        disabled={me.projects.length === 0}
        onChange={(e) => setProjectId(Number(e.target.value))}
      >
        {me.projects.length === 0 && <option value="">No project</option>}
        {me.projects.map((p) => (
          <option key={p.project_id} value={p.project_id}>
            {p.project_name}
          </option>
        ))}
      </select>
      {role && (
        <span className={`role-badge role-${role}`} data-testid="current-role" title="Your role in this project">
          {role}
        </span>
      )}
      <button type="button" className="topbar-button" title="New project" aria-label="New project" onClick={() => setCreating(true)}>
        +
      </button>
      {creating && (
        <Modal title="New project" onClose={() => setCreating(false)} testId="create-project-dialog">
          <p className="help">A project holds runs, datasets and share links, with its own members and roles.</p>
          <CreateProjectForm
            autoFocus
            onCreated={(project) => {
              setProjectId(project.id);
              setCreating(false);
            }}
          />
        </Modal>
      )}
    </div>
  );
}
