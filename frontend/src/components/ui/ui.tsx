// Small shared building blocks. Feature-specific components live under features/<area>/components.
import { useEffect, useId, useRef, useState } from "react";
import type { ReactNode } from "react";

import type { RunStatus } from "../../api/client";
import { copyText } from "../../lib/clipboard";

export function StatusBadge({ status }: { status: RunStatus }) {
  return (
    <span className={`badge badge-${status}`} data-testid="status-badge">
      {status}
    </span>
  );
}

/** A card; with a title it is a region named by its heading, so a screen reader lists it among the page's parts. */
export function Card({ title, children, actions, id, testId }: { title?: ReactNode; children: ReactNode; actions?: ReactNode; id?: string; testId?: string }) {
  const titleId = useId();
  return (
    <section className="card" id={id} data-testid={testId} aria-labelledby={title ? titleId : undefined}>
      {(title || actions) && (
        <header className="card-header">
          {title && <h2 id={titleId}>{title}</h2>}
          {actions && <div className="card-actions">{actions}</div>}
        </header>
      )}
      {children}
    </section>
  );
}

export function ErrorBox({ error, testId }: { error: unknown; testId?: string }) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="error-box" role="alert" data-testid={testId}>
      {message}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <div className="loading">Loading {what}…</div>;
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty-state">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

export function ProgressBar({ percent, label }: { percent: number | null; label?: string }) {
  return (
    <div className="progress" role="progressbar" aria-valuenow={percent ?? undefined} aria-valuemin={0} aria-valuemax={100}>
      <div className="progress-fill" style={{ width: `${Math.min(100, percent ?? 0)}%` }} />
      {label && <span className="progress-label">{label}</span>}
    </div>
  );
}

/** A labelled form field; `name` ties the label, the input's id (`field-<name>`) and its error (`field-error-<name>`). */
export function Field({
  name,
  label,
  error,
  help,
  children,
  className,
}: {
  name: string;
  label: ReactNode;
  error?: string;
  help?: ReactNode;
  children: ReactNode;
  className?: string;
}) {
  return (
    <div className={`field${className ? ` ${className}` : ""}`}>
      <label htmlFor={`field-${name}`}>{label}</label>
      {children}
      {error && (
        <div className="field-error" id={`field-${name}-error`} data-testid={`field-error-${name}`}>
          {error}
        </div>
      )}
      {help && <div className="help">{help}</div>}
    </div>
  );
}

/** Props for an input inside <Field name=…>: its id, name and error state. */
export function fieldProps(name: string, error?: string) {
  return {
    id: `field-${name}`,
    name,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": error ? `field-${name}-error` : undefined,
  };
}

/** A value to hand on (a link, a secret) in a read-only input, with a Copy button. */
export function CopyField({
  value,
  label,
  testId,
  copyTestId,
}: {
  value: string;
  label: string;
  testId: string;
  copyTestId?: string;
}) {
  const inputRef = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  useEffect(() => {
    if (copied === null) return;
    const timer = setTimeout(() => setCopied(null), 2500);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <div className="copy-field">
      <input
        ref={inputRef}
        readOnly
        value={value}
        aria-label={label}
        data-testid={testId}
        className="mono"
        spellCheck={false}
        onFocus={(e) => e.currentTarget.select()}
      />
      <button
        type="button"
        data-testid={copyTestId}
        onClick={() => void copyText(value, inputRef.current).then((ok) => setCopied(ok ? "yes" : "no"))}
      >
        {copied === "yes" ? "Copied" : "Copy"}
      </button>
      {copied === "no" && <span className="help">Selected: press Ctrl+C (⌘C) to copy</span>}
    </div>
  );
}

/** A modal dialog (the browser's <dialog>: focus stays inside, Esc closes it). */
export function Modal({
  title,
  onClose,
  children,
  testId,
}: {
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  testId?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      className="modal"
      data-testid={testId}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <header className="modal-header">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="modal-close" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  );
}
