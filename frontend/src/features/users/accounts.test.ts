import { describe, expect, it } from "vitest";

import type { Membership } from "../auth";
import { accountStatus, ownedProjects, USER_ACTIONS, userActions, userCreateBody, type NewAccountForm, type User } from "./accounts";

const ME = 1;

function user(overrides: Partial<User> = {}): User {
  return {
    id: 2,
    email: "ada@example.com",
    display_name: "Ada",
    is_admin: false,
    is_active: true,
    invite_pending: false,
    created_at: "2025-03-10T12:00:00Z",
    last_sign_in_at: null,
    ...overrides,
  };
}

describe("accountStatus", () => {
  it("tells active, invited and deactivated accounts apart", () => {
    expect(accountStatus(user())).toBe("active");
    expect(accountStatus(user({ invite_pending: true }))).toBe("invited");
    expect(accountStatus(user({ is_active: false }))).toBe("deactivated");
  });

  it("calls a deactivated invitee deactivated: their link does not work", () => {
    expect(accountStatus(user({ is_active: false, invite_pending: true }))).toBe("deactivated");
  });
});

describe("userActions", () => {
  it("offers another active member deactivation and admin rights", () => {
    expect(userActions(user(), ME)).toEqual(["make_admin", "deactivate"]);
    expect(userActions(user({ is_admin: true }), ME)).toEqual(["remove_admin", "deactivate"]);
  });

  it("offers reactivation for a deactivated account", () => {
    expect(userActions(user({ is_active: false }), ME)).toEqual(["make_admin", "reactivate"]);
  });

  it("offers a new invitation link only to an active invitee", () => {
    expect(userActions(user({ invite_pending: true }), ME)).toEqual(["new_invite", "make_admin", "deactivate"]);
    expect(userActions(user({ invite_pending: true, is_active: false }), ME)).not.toContain("new_invite");
  });

  it("never offers you a way to lock yourself out", () => {
    expect(userActions(user({ id: ME, is_admin: true }), ME)).toEqual([]);
  });

  it("sends the change each action names", () => {
    expect(USER_ACTIONS.deactivate.update).toEqual({ is_active: false });
    expect(USER_ACTIONS.reactivate.update).toEqual({ is_active: true });
    expect(USER_ACTIONS.make_admin.update).toEqual({ is_admin: true });
    expect(USER_ACTIONS.remove_admin.update).toEqual({ is_admin: false });
    expect(USER_ACTIONS.new_invite.update).toBeUndefined();
  });
});

describe("ownedProjects", () => {
  it("keeps the projects you own", () => {
    const memberships: Membership[] = [
      { project_id: 1, project_name: "default", role: "owner" },
      { project_id: 2, project_name: "shared", role: "editor" },
      { project_id: 3, project_name: "mine", role: "owner" },
    ];
    expect(ownedProjects(memberships).map((m) => m.project_id)).toEqual([1, 3]);
  });
});

describe("userCreateBody", () => {
  const form: NewAccountForm = {
    email: " ada@example.com ",
    displayName: " Ada ",
    password: "",
    isAdmin: false,
    projectId: "",
    role: "editor",
  };

  it("asks for an invitation when no password is set, and joins no project", () => {
    expect(userCreateBody(form)).toEqual({
      email: "ada@example.com",
      display_name: "Ada",
      password: null,
      is_admin: false,
      project_id: null,
      role: "editor",
    });
  });

  it("sends the password as typed, admin rights, and the project with its role", () => {
    expect(userCreateBody({ ...form, password: " secret pass ", isAdmin: true, projectId: "3" })).toEqual({
      email: "ada@example.com",
      display_name: "Ada",
      password: " secret pass ",
      is_admin: true,
      project_id: 3,
      role: "editor",
    });
  });
});
