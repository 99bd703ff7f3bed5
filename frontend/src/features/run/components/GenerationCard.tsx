// Evaluation by generation: the tuned and the base model's greedy answers to the same eval rows, scored against the
// expected answers, and a preference run's reward accuracy; below, the answers row by row.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";

import type { Run, Schemas } from "../../../api/client";
import { Card, ErrorBox, Loading } from "../../../components/ui/ui";
import { formatNumber } from "../../../lib/format";
import { runPredictionsQueryOptions } from "../api/queries";

type Scores = Schemas["GenerationScoresPublic"];
type ScoreKey = "exact_match" | "rouge_l" | "bleu";

const PREDICTIONS_PAGE = 10;

const fractionAsPercent = (value: number) => `${(value * 100).toFixed(1)} %`;

/** `difference` with its sign, in `format`'s digits; no sign when it rounds to zero. */
function signed(difference: number, format: (magnitude: number) => string): string {
  const text = format(Math.abs(difference));
  if (Number.parseFloat(text) === 0) return text;
  return `${difference > 0 ? "+" : "−"}${text}`;
}

const SCORES: { key: ScoreKey; label: string; title: string; format: (value: number) => string; difference: (d: number) => string }[] = [
  {
    key: "exact_match",
    label: "Exact match",
    title: "Rows answered exactly as expected (case and whitespace aside)",
    format: fractionAsPercent,
    difference: (d) => `${signed(d * 100, (m) => m.toFixed(1))} pts`,
  },
  {
    key: "rouge_l",
    label: "ROUGE-L",
    title: "Mean ROUGE-L F1 over the rows, 0–1",
    format: (v) => v.toFixed(3),
    difference: (d) => signed(d, (m) => m.toFixed(3)),
  },
  {
    key: "bleu",
    label: "BLEU",
    title: "Corpus BLEU over the rows, 0–100",
    format: (v) => v.toFixed(1),
    difference: (d) => signed(d, (m) => m.toFixed(1)),
  },
];

/** "Rows 11–20 of 25", and where the previous and next pages start (null: there is none). */
function predictionsPage(offset: number, shown: number, total: number) {
  return {
    label: shown === 0 ? `No rows here (${total} in all)` : `Rows ${offset + 1}–${offset + shown} of ${total}`,
    previousOffset: offset > 0 ? Math.max(0, offset - PREDICTIONS_PAGE) : null,
    nextOffset: offset + shown < total ? offset + shown : null,
  };
}

type GenerationCardProps = {
  run: Run;
  /**
   * Whether the page may download the run's files. The predictions are not a download: a share link reads them
   * with or without downloads (the route asks only for a reader), so the card shows them either way.
   */
  downloads: boolean;
};

export function GenerationCard({ run }: GenerationCardProps) {
  const evaluation = run.generation_eval ?? null;
  const rewardAccuracy = run.reward_accuracy ?? null;
  if (evaluation === null && rewardAccuracy === null) return null;
  return (
    <Card title="Evaluation by generation" testId="generation-card">
      {evaluation && <ScoresTable evaluation={evaluation} />}
      {rewardAccuracy !== null && <RewardScores accuracy={rewardAccuracy} margin={run.reward_margin ?? null} />}
      {evaluation && <PredictionsTable runId={run.id} />}
    </Card>
  );
}

function ScoresTable({ evaluation }: { evaluation: Schemas["RunGenerationEvalPublic"] }) {
  const { tuned, base, rows_requested: requested } = evaluation;
  const rows = (scores: Scores | null) => (scores ? `${scores.rows} of ${requested}` : "—");
  return (
    <>
      <p className="help">
        Greedy answers to the first {requested} eval rows with an expected answer, scored against it. Rows left
        unanswered when time ran out are not scored.
      </p>
      <div className="table-scroll">
        <table className="generation-scores" data-testid="generation-scores" aria-label="Scores">
          <thead>
            <tr>
              <th>Score</th>
              <th className="num">Base model</th>
              <th className="num">Tuned</th>
              <th className="num">Tuned − base</th>
            </tr>
          </thead>
          <tbody>
            {SCORES.map((score) => (
              <tr key={score.key} data-score={score.key}>
                <th scope="row" title={score.title}>
                  {score.label}
                </th>
                <td className="num" data-model="base">
                  {base ? score.format(base[score.key]) : "—"}
                </td>
                <td className="num" data-model="tuned">
                  {tuned ? score.format(tuned[score.key]) : "—"}
                </td>
                <td className="num" data-model="difference">
                  {tuned && base ? score.difference(tuned[score.key] - base[score.key]) : "—"}
                </td>
              </tr>
            ))}
            <tr data-score="rows">
              <th scope="row" title="Rows answered within the time budget, which the scores cover">
                Rows scored
              </th>
              <td className="num" data-model="base">
                {rows(base)}
              </td>
              <td className="num" data-model="tuned">
                {rows(tuned)}
              </td>
              <td />
            </tr>
          </tbody>
        </table>
      </div>
    </>
  );
}

function RewardScores({ accuracy, margin }: { accuracy: number; margin: number | null }) {
  return (
    <table className="generation-scores" data-testid="reward-scores">
      <tbody>
        <tr data-score="reward_accuracy">
          <th scope="row" title="Eval pairs whose chosen answer the policy rewards above the rejected one, at the last eval (the base model, the reference, scores 0)">
            Reward accuracy
          </th>
          <td className="num">{fractionAsPercent(accuracy)}</td>
        </tr>
        <tr data-score="reward_margin">
          <th scope="row" title="Mean reward of the chosen answer minus the rejected one, at the last eval">
            Reward margin
          </th>
          <td className="num">{formatNumber(margin)}</td>
        </tr>
      </tbody>
    </table>
  );
}

function PredictionsTable({ runId }: { runId: number }) {
  const [offset, setOffset] = useState(0);
  const predictions = useQuery(runPredictionsQueryOptions(runId, offset, PREDICTIONS_PAGE));
  if (predictions.isPending) return <Loading what="predictions" />;
  if (predictions.error) return <ErrorBox error={predictions.error} />;
  const { data, count } = predictions.data;
  if (count === 0) return null;
  const page = predictionsPage(predictions.data.offset, data.length, count);
  return (
    <>
      <div className="preview-pager">
        <h3 aria-live="polite">{page.label}</h3>
        <button type="button" className="small" disabled={page.previousOffset === null || predictions.isPlaceholderData}
          onClick={() => page.previousOffset !== null && setOffset(page.previousOffset)}>
          Previous
        </button>
        <button type="button" className="small" disabled={page.nextOffset === null || predictions.isPlaceholderData}
          onClick={() => page.nextOffset !== null && setOffset(page.nextOffset)}>
          Next
        </button>
      </div>
      <div className="table-scroll">
        <table className="samples predictions" data-testid="predictions-table" aria-label="Predictions">
          <thead>
            <tr>
              <th>Prompt</th>
              <th>Expected</th>
              <th>Base answer</th>
              <th>Tuned answer</th>
              <th className="num" title="The tuned answer's ROUGE-L F1, 0–1">ROUGE-L</th>
              <th title="Whether the tuned answer equals the expected one (case and whitespace aside)">Exact</th>
            </tr>
          </thead>
          <tbody>
            {data.map((row, i) => (
              <tr key={predictions.data.offset + i} data-testid="prediction-row">
                <td><LongText text={row.prompt} /></td>
                <td><LongText text={row.expected} /></td>
                <td><Answer text={row.base} /></td>
                <td><Answer text={row.tuned} /></td>
                <td className="num" data-metric="rouge_l">{row.tuned_scores ? row.tuned_scores.rouge_l.toFixed(3) : "—"}</td>
                <td data-metric="exact_match">{row.tuned_scores ? (row.tuned_scores.exact_match === 1 ? "yes" : "no") : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** A chat-templated prompt runs long: the cell shows its start and scrolls, and the whole text is its tooltip. */
function LongText({ text }: { text: string }) {
  return (
    <pre className="prediction-text" title={text}>
      {text}
    </pre>
  );
}

function Answer({ text }: { text: string | null }) {
  if (text === null) return <span className="help">not recorded</span>;
  if (text === "") return <span className="help">(nothing: it ended at once)</span>;
  return <LongText text={text} />;
}
