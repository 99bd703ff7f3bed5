// A launch form field's layout: label, control, error and help, wired for screen readers (the run and study forms).
import type { ReactNode } from "react";

import type { Catalog } from "./launchChoice";

type Model = Catalog["models"][number];

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

/** The base models a form offers, by title; one not on this server is shown, disabled. */
export function ModelOptions({ models }: { models: readonly Pick<Model, "name" | "title" | "available">[] }) {
  return (
    <>
      {models.map((m) => (
        <option key={m.name} value={m.name} disabled={!m.available}>
          {m.title}
          {m.available ? "" : " (unavailable)"}
        </option>
      ))}
    </>
  );
}

/** How to get each model that is not on this server (a model field's help). */
export function UnavailableModels({ models }: { models: readonly Model[] }) {
  return (
    <>
      {models
        .filter((m) => !m.available)
        .map((m) => (
          <span key={m.name} className="unavailable-model">
            {" "}
            {m.title} is not on this server{m.how_to_get && <>: get it with <code>{m.how_to_get}</code></>}.
          </span>
        ))}
    </>
  );
}
