// The auth feature's public API for other features: the session, the role rules and the account's cache keys.
export { authKeys } from "./api/queries";
export { RoleSelect } from "./components/RoleSelect";
export { canEdit, canOwn, roleAllows, ROLE_HELP, ROLES } from "./roles";
export { useSession, type Me, type Membership, type Session } from "./session";
