// What the Users page shows for an account and offers to do with it (the server's rules, mirrored for the UI).
import type { Role, Schemas } from "../../api/client";
import type { Membership } from "../auth";

export type User = Schemas["UserPublic"];

export type AccountStatus = "active" | "invited" | "deactivated";

export const ACCOUNT_STATUS: Record<AccountStatus, { label: string; badge: string; help: string }> = {
  active: { label: "Active", badge: "badge-succeeded", help: "Signs in with a password" },
  invited: { label: "Invited", badge: "badge-queued", help: "Has not opened the invitation yet" },
  deactivated: { label: "Deactivated", badge: "badge-canceled", help: "Cannot sign in; their API tokens do not work" },
};

/** Deactivated wins over invited: the invitation link of a deactivated account does not work either. */
export function accountStatus(user: Pick<User, "is_active" | "invite_pending">): AccountStatus {
  if (!user.is_active) return "deactivated";
  return user.invite_pending ? "invited" : "active";
}

export type UserAction = "new_invite" | "make_admin" | "remove_admin" | "deactivate" | "reactivate";

export const USER_ACTIONS: Record<
  UserAction,
  { label: string; title: string; danger?: boolean; update?: Schemas["UserUpdate"] }
> = {
  new_invite: { label: "New invite link", title: "A fresh invitation link; the previous one stops working" },
  make_admin: { label: "Make admin", title: "Admins create, invite and deactivate accounts", update: { is_admin: true } },
  remove_admin: { label: "Remove admin", title: "They keep their projects and roles", danger: true, update: { is_admin: false } },
  deactivate: {
    label: "Deactivate",
    title: "Sign-in stops; their sessions end and their API tokens stop working at once. Their runs stay.",
    danger: true,
    update: { is_active: false },
  },
  reactivate: { label: "Reactivate", title: "They can sign in again", update: { is_active: true } },
};

/**
 * What a row offers. On your own row nothing that would lock you out (deactivating yourself, dropping your own admin
 * rights); a new invitation only for an invited account that is active, since a deactivated one cannot accept it.
 */
export function userActions(user: User, currentUserId: number): UserAction[] {
  const self = user.id === currentUserId;
  const actions: UserAction[] = [];
  if (user.invite_pending && user.is_active) actions.push("new_invite");
  if (!user.is_admin) actions.push("make_admin");
  else if (!self) actions.push("remove_admin");
  if (!user.is_active) actions.push("reactivate");
  else if (!self) actions.push("deactivate");
  return actions;
}

/** The projects an admin may add a new account to: those they own (the server checks the same). */
export function ownedProjects(memberships: readonly Membership[]): Membership[] {
  return memberships.filter((m) => m.role === "owner");
}

export type NewAccountForm = {
  email: string;
  displayName: string;
  password: string;
  isAdmin: boolean;
  /** A project id from a <select>; "" for none. */
  projectId: string;
  role: Role;
};

/** The create request: no password means an invitation; no project means no membership (the server then ignores role). */
export function userCreateBody(form: NewAccountForm): Schemas["UserCreate"] {
  return {
    email: form.email.trim(),
    display_name: form.displayName.trim(),
    password: form.password === "" ? null : form.password,
    is_admin: form.isAdmin,
    project_id: form.projectId === "" ? null : Number(form.projectId),
    role: form.role,
  };
}
