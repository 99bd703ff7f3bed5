import { describe, expect, it } from "vitest";

import { ApiError } from "./client";
import { formErrors } from "./formErrors";

describe("formErrors", () => {
  it("puts a validation message at its field, under the form's name for it", () => {
    const error = new ApiError(422, "VALIDATION_ERROR", "password: String should have at least 8 characters", [
      { field: "password", message: "String should have at least 8 characters" },
    ]);
    expect(formErrors(error, { password: "password" })).toEqual({
      fields: { password: "String should have at least 8 characters" },
      form: null,
    });
    const taken = new ApiError(409, "ALREADY_MEMBER", "email: ada@example.com is already a member", { field: "email" });
    expect(formErrors(taken, { email: "member_email" }).fields).toEqual({ member_email: "ada@example.com is already a member" });
  });

  it("reports a field the form does not show with the form", () => {
    const error = new ApiError(422, "VALIDATION_ERROR", "run_ids: runs of one project only", [
      { field: "run_ids", message: "runs of one project only" },
    ]);
    expect(formErrors(error, { title: "title" })).toEqual({ fields: {}, form: "run_ids: runs of one project only" });
  });

  it("keeps the server's words for the rest", () => {
    const error = new ApiError(401, "INVALID_CREDENTIALS", "email or password is incorrect", null);
    expect(formErrors(error, { email: "email" })).toEqual({ fields: {}, form: "email or password is incorrect" });
    expect(formErrors(null, {})).toEqual({ fields: {}, form: null });
  });
});
