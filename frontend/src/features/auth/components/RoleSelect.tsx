import type { SelectHTMLAttributes } from "react";

import type { Role } from "../../../api/client";
import { ROLES } from "../roles";

type RoleSelectProps = Omit<SelectHTMLAttributes<HTMLSelectElement>, "value" | "onChange"> & {
  value: Role;
  onChange: (role: Role) => void;
};

/** The role picker of every form that gives someone a role in a project, in the roles' order. */
export function RoleSelect({ value, onChange, ...props }: RoleSelectProps) {
  return (
    <select {...props} value={value} onChange={(e) => onChange(e.target.value as Role)}>
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}
