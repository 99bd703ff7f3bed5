// The completions training wrote for a few eval prompts (samples.jsonl): prompt, expected, base and tuned.
import { useQuery } from "@tanstack/react-query";

import { Card, ErrorBox } from "../../../components/ui/ui";
import { runSamplesQueryOptions } from "../api/queries";

export function SamplesTable({ runId }: { runId: number }) {
  const samples = useQuery(runSamplesQueryOptions(runId));
  if (samples.error) return <ErrorBox error={samples.error} />;
  if (!samples.data?.count) return null;
  return (
    <Card title="Samples">
      <p className="help">Greedy completions of a few held-out prompts, written when training ended.</p>
      {samples.data.data.some((sample) => sample.cut_short) && (
        <p className="notice" data-testid="samples-cut-short">
          Sample generation ran out of its time budget: some completions are cut short or not recorded.
        </p>
      )}
      <div className="table-scroll">
        <table className="samples">
          <thead>
            <tr>
              <th>Prompt</th>
              <th>Expected</th>
              <th>Base</th>
              <th>Tuned</th>
            </tr>
          </thead>
          <tbody>
            {samples.data.data.map((sample, i) => (
              <tr key={i}>
                <td><pre>{sample.prompt}</pre></td>
                <td><pre>{sample.expected}</pre></td>
                <td><Completion text={sample.base} /></td>
                <td><Completion text={sample.tuned} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}

function Completion({ text }: { text: string | null | undefined }) {
  if (text == null) return <span className="help">not recorded</span>;
  if (text === "") return <span className="help">(nothing: it ended at once)</span>;
  return <pre>{text}</pre>;
}
