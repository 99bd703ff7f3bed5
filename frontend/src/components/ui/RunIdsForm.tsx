// Typing run ids into a page that shows runs from ?runs=1,2,3 (compare, analysis).
import { useState, type FormEvent } from "react";

import type { RunIdsSelection } from "../../lib/runIds";

type Props = {
  /** The ids in the URL now; the field follows them when they change. */
  value: string;
  parse: (text: string) => RunIdsSelection;
  onApply: (ids: number[]) => void;
  submitLabel: string;
  testId: string;
};

export function RunIdsForm({ value, parse, onApply, submitLabel, testId }: Props) {
  const [text, setText] = useState(value);
  const [lastValue, setLastValue] = useState(value);
  if (value !== lastValue) {
    setLastValue(value);
    setText(value);
  }
  const parsed = parse(text);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (parsed.kind === "ok") onApply(parsed.ids);
    else if (parsed.kind === "none") onApply([]);
  };
  return (
    <form className="toolbar run-picker" onSubmit={submit}>
      <input
        aria-label="Run ids"
        placeholder="Run ids, e.g. 1,2,3"
        value={text}
        onChange={(e) => setText(e.target.value)}
        aria-invalid={parsed.kind === "invalid" || parsed.kind === "too-many" ? true : undefined}
        data-testid={testId}
      />
      <button type="submit">{submitLabel}</button>
    </form>
  );
}
