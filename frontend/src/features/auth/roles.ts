// Roles are ordered: each can do everything the ones before it can (the server's rule, mirrored for the UI).
import type { Role } from "../../api/client";

export const ROLES: readonly Role[] = ["viewer", "editor", "owner"];

export const ROLE_HELP: Record<Role, string> = {
  viewer: "reads runs, metrics and datasets",
  editor: "also launches, cancels, clones, uploads and shares",
  owner: "also manages members, settings and deletes the project",
};

/** Whether `role` (null: not a member) may do what needs `needed`. */
export function roleAllows(role: Role | null | undefined, needed: Role): boolean {
  return role != null && ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** Launch, cancel, clone, upload, share. */
export function canEdit(role: Role | null | undefined): boolean {
  return roleAllows(role, "editor");
}

/** Members, settings, the audit log, deleting the project. */
export function canOwn(role: Role | null | undefined): boolean {
  return roleAllows(role, "owner");
}
