// The pure half of the launch form: JSON Schema properties → field descriptions, and form values → typed params.
// The registry of methods publishes one JSON Schema per method (Pydantic's), so no field is written by hand here.

export type JsonSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

export type FieldKind = "number" | "integer" | "select" | "boolean" | "string" | "list" | "json";

export type FieldOption = { key: string; label: string; value: unknown };

export type FieldSpec = {
  name: string;
  kind: FieldKind;
  title: string;
  description?: string;
  default: unknown;
  /** Null is a valid value: an empty input sends null. */
  nullable: boolean;
  required: boolean;
  min?: number;
  max?: number;
  /** The bound itself is not allowed (exclusiveMinimum / exclusiveMaximum). */
  minExclusive?: boolean;
  maxExclusive?: boolean;
  step?: number;
  options?: FieldOption[];
  /** For a nullable "select": what its empty choice reads (default "—"). */
  noneLabel?: string;
  /** For "list": a single value may be sent as a plain string (`list[str] | str`). */
  allowsString?: boolean;
};

/** A value as the inputs hold it: text for every input but checkboxes. */
export type FormValue = string | boolean;
export type FormValues = Record<string, FormValue>;

const isNullSchema = (s: JsonSchema) => s.type === "null" || (s.const === null && s.type === undefined);

function humanize(name: string): string {
  const words = name.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A step that moves the value by about one unit of its own magnitude, so arrow keys stay useful. */
function numberStep(schema: JsonSchema, fallback: unknown): number {
  if (schema.multipleOf) return schema.multipleOf;
  if (typeof fallback === "number" && fallback !== 0 && Number.isFinite(fallback)) {
    return 10 ** Math.floor(Math.log10(Math.abs(fallback)));
  }
  const upper = schema.maximum ?? schema.exclusiveMaximum;
  return upper !== undefined && upper <= 1 ? 0.01 : 0.1;
}

function optionsOf(variants: JsonSchema[]): FieldOption[] | null {
  const values: unknown[] = [];
  for (const variant of variants) {
    if (variant.enum) values.push(...variant.enum);
    else if ("const" in variant) values.push(variant.const);
    else return null;
  }
  return values.map((value) => ({ key: JSON.stringify(value), label: String(value), value }));
}

/** Describe one schema property as the input that edits it. */
export function describeField(name: string, schema: JsonSchema, required = false): FieldSpec {
  const variants = schema.anyOf ?? schema.oneOf ?? [schema];
  const nullable = variants.some(isNullSchema) || (Array.isArray(schema.type) && schema.type.includes("null"));
  const concrete = variants.filter((v) => !isNullSchema(v));
  const base: FieldSpec = {
    name,
    kind: "json",
    title: schema.title ?? humanize(name),
    description: schema.description,
    default: schema.default,
    nullable,
    required,
  };

  const options = optionsOf(concrete);
  if (options && options.length > 0) return { ...base, kind: "select", options };

  const typeOf = (v: JsonSchema) => (Array.isArray(v.type) ? v.type.find((t) => t !== "null") : v.type);
  const types = concrete.map(typeOf);

  if (types.includes("array") && concrete.every((v) => typeOf(v) === "string" || (typeOf(v) === "array" && (!v.items || typeOf(v.items) === "string")))) {
    return { ...base, kind: "list", allowsString: types.includes("string") };
  }
  if (concrete.length !== 1) return base;

  const only = concrete[0];
  switch (typeOf(only)) {
    case "boolean":
      return { ...base, kind: "boolean" };
    case "string":
      return { ...base, kind: "string" };
    case "integer":
    case "number": {
      const integer = typeOf(only) === "integer";
      const min = only.minimum ?? only.exclusiveMinimum;
      const max = only.maximum ?? only.exclusiveMaximum;
      return {
        ...base,
        kind: integer ? "integer" : "number",
        ...(min !== undefined && { min, minExclusive: only.minimum === undefined }),
        ...(max !== undefined && { max, maxExclusive: only.maximum === undefined }),
        step: integer ? 1 : numberStep(only, schema.default),
      };
    }
    default:
      return base;
  }
}

/** Every property of an object schema, in the schema's order. */
export function describeSchema(schema: JsonSchema): FieldSpec[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => describeField(name, property, required.has(name)));
}

/** The text an input shows for a typed value. */
export function toFormValue(field: FieldSpec, value: unknown): FormValue {
  if (field.kind === "boolean") return value === true;
  if (value === null || value === undefined) return "";
  switch (field.kind) {
    case "select":
      return JSON.stringify(value);
    case "list":
      return Array.isArray(value) ? value.join(", ") : String(value);
    case "json":
      return JSON.stringify(value);
    default:
      return String(value);
  }
}

/** Form values for every field, from `source` where it has the field, else from the schema default. */
export function toFormValues(fields: FieldSpec[], source: Record<string, unknown> = {}): FormValues {
  return Object.fromEntries(
    fields.map((field) => [field.name, toFormValue(field, field.name in source ? source[field.name] : field.default)]),
  );
}

type Parsed = { value: unknown } | { error: string } | { omit: true };

function parseField(field: FieldSpec, raw: FormValue | undefined): Parsed {
  if (field.kind === "boolean") return { value: raw === true };
  const text = typeof raw === "string" ? raw.trim() : "";
  if (text === "" && field.kind !== "string") {
    if (field.nullable) return { value: null };
    if (field.kind === "list") return { value: [] };
    // An emptied number (or one the browser could not parse, which reads as empty) must not fall back silently.
    if (field.kind === "number" || field.kind === "integer") return { error: "Enter a number" };
    return field.required ? { error: "Required" } : { omit: true };
  }
  switch (field.kind) {
    case "integer":
    case "number": {
      const value = Number(text);
      if (!Number.isFinite(value)) return { error: "Enter a number" };
      if (field.kind === "integer" && !Number.isInteger(value)) return { error: "Enter a whole number" };
      return { value };
    }
    case "select": {
      const option = field.options?.find((o) => o.key === text);
      return option ? { value: option.value } : { error: "Choose one of the options" };
    }
    case "list": {
      const items = text.split(",").map((s) => s.trim()).filter(Boolean);
      return { value: field.allowsString && items.length === 1 && !text.includes(",") ? items[0] : items };
    }
    case "json":
      try {
        return { value: JSON.parse(text) };
      } catch {
        return { error: "Enter valid JSON" };
      }
    default:
      return text === "" && field.nullable ? { value: null } : { value: typeof raw === "string" ? raw : "" };
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Typed params from form values. Values equal to `defaults` are left out (the server fills them in); anything
 * unparseable or emptied that cannot be null becomes an error keyed by its field path (`params.<name>`), never NaN.
 */
export function toParams(
  fields: FieldSpec[],
  values: FormValues,
  defaults: Record<string, unknown> = {},
  prefix = "params",
): { params: Record<string, unknown>; errors: Record<string, string> } {
  const params: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const parsed = parseField(field, values[field.name]);
    if ("error" in parsed) errors[`${prefix}.${field.name}`] = parsed.error;
    else if ("value" in parsed) {
      const fallback = field.name in defaults ? defaults[field.name] : field.default;
      if (field.required || fallback === undefined || !same(parsed.value, fallback)) params[field.name] = parsed.value;
    }
  }
  return { params, errors };
}

/**
 * Attach each error to the input it belongs to: an exact path, else the longest rendered path it starts with
 * (`params.target_modules.0` → `params.target_modules`). The rest have no input and are shown at the top.
 */
export function assignFieldErrors(
  errors: Record<string, string>,
  knownFields: string[],
): { byField: Record<string, string>; unmatched: [string, string][] } {
  const byField: Record<string, string> = {};
  const unmatched: [string, string][] = [];
  const byLength = [...knownFields].sort((a, b) => b.length - a.length);
  for (const [path, message] of Object.entries(errors)) {
    const target = byLength.find((f) => path === f || path.startsWith(`${f}.`));
    if (target && !(target in byField)) byField[target] = message;
    else if (!target) unmatched.push([path, message]);
  }
  return { byField, unmatched };
}
