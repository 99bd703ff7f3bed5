// Inputs rendered from a method's JSON Schema: one per property, described by schemaFields.ts.
import type { FieldSpec, FormValue, FormValues } from "./schemaFields";

type Props = {
  fields: FieldSpec[];
  values: FormValues;
  /** Messages keyed by field path (`params.learning_rate`). */
  errors: Record<string, string>;
  onChange: (name: string, value: FormValue) => void;
  prefix?: string;
};

export function SchemaForm({ fields, values, errors, onChange, prefix = "params" }: Props) {
  return (
    <div className="schema-form">
      {fields.map((field) => (
        <SchemaField
          key={field.name}
          field={field}
          path={`${prefix}.${field.name}`}
          value={values[field.name]}
          error={errors[`${prefix}.${field.name}`]}
          onChange={(value) => onChange(field.name, value)}
        />
      ))}
    </div>
  );
}

function boundsHint(field: FieldSpec): string | null {
  const parts: string[] = [];
  if (field.min !== undefined) parts.push(`${field.minExclusive ? ">" : "≥"} ${field.min}`);
  if (field.max !== undefined) parts.push(`${field.maxExclusive ? "<" : "≤"} ${field.max}`);
  return parts.length ? parts.join(", ") : null;
}

function placeholderOf(field: FieldSpec): string | undefined {
  if (field.default === null || field.default === undefined) return field.nullable ? "none" : undefined;
  return Array.isArray(field.default) ? field.default.join(", ") : String(field.default);
}

function SchemaField({
  field,
  path,
  value,
  error,
  onChange,
}: {
  field: FieldSpec;
  path: string;
  value: FormValue | undefined;
  error?: string;
  onChange: (value: FormValue) => void;
}) {
  const id = `field-${path}`;
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  const bounds = field.kind === "number" || field.kind === "integer" ? boundsHint(field) : null;
  const hasHelp = Boolean(field.description || bounds || field.kind === "list");
  const describedBy = [hasHelp ? helpId : null, error ? errorId : null].filter(Boolean).join(" ");
  const common = {
    id,
    name: path,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": describedBy || undefined,
  };
  const text = typeof value === "string" ? value : "";

  let input;
  switch (field.kind) {
    case "boolean":
      input = (
        <label className="checkbox-label" htmlFor={id}>
          <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
          {field.title}
        </label>
      );
      break;
    case "select":
      input = (
        <select {...common} value={text} onChange={(e) => onChange(e.target.value)}>
          {(field.nullable || text === "") && <option value="">{field.noneLabel ?? "—"}</option>}
          {field.options?.map((option) => (
            <option key={option.key} value={option.key}>
              {option.label}
            </option>
          ))}
        </select>
      );
      break;
    case "number":
    case "integer":
      input = (
        <input
          {...common}
          type="number"
          inputMode={field.kind === "integer" ? "numeric" : "decimal"}
          min={field.min}
          max={field.max}
          step={field.step ?? "any"}
          placeholder={placeholderOf(field)}
          value={text}
          onChange={(e) => onChange(e.target.value)}
        />
      );
      break;
    default:
      input = (
        <input
          {...common}
          type="text"
          placeholder={placeholderOf(field)}
          value={text}
          spellCheck={false}
          onChange={(e) => onChange(e.target.value)}
        />
      );
  }

  return (
    <div className={`field field-${field.kind}`}>
      {field.kind !== "boolean" && (
        <label htmlFor={id} title={field.name}>
          {field.title}
          {field.required && <span aria-hidden> *</span>}
        </label>
      )}
      {input}
      {error && (
        <div className="field-error" id={errorId} data-testid={`field-error-${path}`}>
          {error}
        </div>
      )}
      {hasHelp && (
        <div className="help" id={helpId}>
          {field.description}
          {field.kind === "list" && `${field.description ? " · " : ""}comma-separated`}
          {bounds && <span className="bounds"> ({bounds})</span>}
        </div>
      )}
    </div>
  );
}
