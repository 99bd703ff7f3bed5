// A failed form: messages that belong to one of its fields go there, everything else above the button.
import { ApiError } from "./client";

export type FormErrors = { fields: Record<string, string>; form: string | null };

/**
 * Split an error into messages for the form's fields and one for the form. `fields` maps the API's field names to
 * the form's (e.g. {email: "member_email"}); a field the form does not show is reported with the form's message.
 */
export function formErrors(error: unknown, fields: Record<string, string>): FormErrors {
  if (!error) return { fields: {}, form: null };
  const byField: Record<string, string> = {};
  const elsewhere: string[] = [];
  if (error instanceof ApiError) {
    for (const [field, message] of Object.entries(error.fieldErrors())) {
      if (field in fields) byField[fields[field]] = message;
      else elsewhere.push(`${field}: ${message}`);
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  const form = elsewhere.length > 0 ? elsewhere.join(" · ") : Object.keys(byField).length > 0 ? null : message;
  return { fields: byField, form };
}
