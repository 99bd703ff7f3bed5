// A launch form field's layout: label, control, error and help, wired for screen readers (the run and study forms).
import type { ReactNode } from "react";

export function inputProps(name: string, error?: string) {
  return {
    id: `field-${name}`,
    name,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": `field-${name}-help${error ? ` field-${name}-error` : ""}`,
  };
}

export function TopField({ name, label, error, help, children }: { name: string; label: string; error?: string; help?: ReactNode; children: ReactNode }) {
  return (
    <div className="field">
      <label htmlFor={`field-${name}`}>{label}</label>
      {children}
      {error && (
        <div className="field-error" id={`field-${name}-error`} data-testid={`field-error-${name}`}>
          {error}
        </div>
      )}
      <div className="help" id={`field-${name}-help`}>
        {help}
      </div>
    </div>
  );
}
