import { EmptyState } from "../components/ui/ui";
import { canEdit, canOwn, ROLE_HELP } from "../features/auth/roles";
import { useSession } from "../features/auth/session";
import { AuditCard } from "../features/projects/components/AuditCard";
import { MembersCard } from "../features/projects/components/MembersCard";
import { ProjectCard } from "../features/projects/components/ProjectCard";
import { ProjectSharesCard } from "../features/shares/components/ProjectSharesCard";
import { InviteCard } from "../features/users/components/InviteCard";

export function ProjectSettingsPage() {
  const { me, project } = useSession();
  if (!project) return <EmptyState title="You are not in any project yet" />;
  const { project_id: projectId, project_name: name, role } = project;
  const owner = canOwn(role);

  return (
    <div className="settings-page" key={projectId}>
      <div className="page-header">
        <h1>
          Project settings <span className="help page-count">{name}</span>
        </h1>
        <span className="help">
          You are {role === "owner" ? "an" : "a"} <strong>{role}</strong>: {ROLE_HELP[role]}
        </span>
      </div>
      <nav className="section-nav" aria-label="Sections">
        <a href="#members">Members</a>
        {me.user.is_admin && <a href="#invite">Invite someone</a>}
        {canEdit(role) && <a href="#share-links">Share links</a>}
        {owner && <a href="#audit">Audit log</a>}
        {owner && <a href="#project">Rename or delete</a>}
      </nav>
      <MembersCard projectId={projectId} role={role} />
      {me.user.is_admin && <InviteCard projectId={projectId} projectName={owner ? name : null} />}
      {canEdit(role) && <ProjectSharesCard projectId={projectId} />}
      {owner && <AuditCard projectId={projectId} />}
      {owner && <ProjectCard key={name} projectId={projectId} name={name} />}
    </div>
  );
}
