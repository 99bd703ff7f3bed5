// @vitest-environment jsdom
// The run page's evaluation by generation: the tuned model's scores against the base model's, a preference run's
// reward accuracy, and the answers row by row, paged through the predictions API by the real client.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { GenerationCard } from "./GenerationCard";

type Prediction = Schemas["RunPredictionPublic"];

function run(figures: Partial<Run>): Run {
  return { id: 7, name: "r", method: "lora", objective: "sft", project_id: 1, status: "succeeded", ...figures } as Run;
}

const evaluated = run({
  generation_eval: {
    rows_requested: 16,
    tuned: { exact_match: 0.625, rouge_l: 0.8123, bleu: 41.27, rows: 16 },
    base: { exact_match: 0.125, rouge_l: 0.9, bleu: 12.0, rows: 15 },
  },
});

const LONG_PROMPT = `<|system|>You are helpful.\n${"Answer the question in one word. ".repeat(40)}\n<|user|>What is 2 + 2?`;

function prediction(i: number): Prediction {
  return {
    prompt: i === 0 ? LONG_PROMPT : `question ${i}`,
    expected: `answer ${i}`,
    tuned: i === 1 ? null : `tuned ${i}`,
    base: `base ${i}`,
    tuned_scores: i === 1 ? null : { exact_match: i % 2 === 0 ? 1 : 0, rouge_l: 0.5, bleu: 20 },
    base_scores: { exact_match: 0, rouge_l: 0.25, bleu: 5 },
  };
}

/** 16 predictions, answered a page at a time as the route does; the queries it was asked, in order. */
function fakePredictions(): string[] {
  const asked: string[] = [];
  const all = Array.from({ length: 16 }, (_, i) => prediction(i));
  fakeNetwork((request) => {
    const url = new URL(request.url);
    if (request.method !== "GET" || url.pathname !== "/api/v1/runs/7/predictions") {
      return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
    }
    asked.push(url.search);
    const offset = Number(url.searchParams.get("offset"));
    const limit = Number(url.searchParams.get("limit"));
    return json({ data: all.slice(offset, offset + limit), count: all.length, offset });
  });
  return asked;
}

const cell = (table: HTMLElement, score: string, model: string) =>
  table.querySelector(`[data-score="${score}"] [data-model="${model}"]`)?.textContent;

describe("GenerationCard", () => {
  it("renders nothing for a run with no evaluation by generation and no reward accuracy", () => {
    const { container } = renderInApp(<GenerationCard run={run({ generation_eval: null, reward_accuracy: null })} downloads />);
    expect(container).toBeEmptyDOMElement();
  });

  it("shows the tuned and base model's scores in their units, the difference and the rows scored", async () => {
    fakePredictions();
    renderInApp(<GenerationCard run={evaluated} downloads />);
    const card = screen.getByTestId("generation-card");
    expect(card).toHaveTextContent("Evaluation by generation");
    const table = within(card).getByTestId("generation-scores");
    expect(cell(table, "exact_match", "tuned")).toBe("62.5 %");
    expect(cell(table, "exact_match", "base")).toBe("12.5 %");
    expect(cell(table, "exact_match", "difference")).toBe("+50.0 pts");
    expect(cell(table, "rouge_l", "tuned")).toBe("0.812");
    expect(cell(table, "rouge_l", "difference")).toBe("−0.088");
    expect(cell(table, "bleu", "tuned")).toBe("41.3");
    expect(cell(table, "bleu", "base")).toBe("12.0");
    expect(cell(table, "bleu", "difference")).toBe("+29.3");
    expect(cell(table, "rows", "tuned")).toBe("16 of 16");
    expect(cell(table, "rows", "base")).toBe("15 of 16");
    expect(within(card).queryByTestId("reward-scores")).toBeNull();
    await screen.findByTestId("predictions-table");
  });

  it("shows no difference where the base model was not scored", async () => {
    fakePredictions();
    renderInApp(<GenerationCard run={run({ generation_eval: { ...evaluated.generation_eval!, base: null } })} downloads />);
    const table = screen.getByTestId("generation-scores");
    expect(cell(table, "rouge_l", "tuned")).toBe("0.812");
    expect(cell(table, "rouge_l", "base")).toBe("—");
    expect(cell(table, "rouge_l", "difference")).toBe("—");
    await screen.findByTestId("predictions-table");
  });

  it("pages through the predictions ten at a time", async () => {
    const asked = fakePredictions();
    renderInApp(<GenerationCard run={evaluated} downloads />);
    const table = await screen.findByTestId("predictions-table");
    expect(screen.getByText("Rows 1–10 of 16")).toBeInTheDocument();
    expect(within(table).getAllByTestId("prediction-row")).toHaveLength(10);
    expect(screen.getByRole("button", { name: "Previous" })).toBeDisabled();

    const [first, second] = within(table).getAllByTestId("prediction-row");
    expect(first.querySelector('[data-metric="rouge_l"]')).toHaveTextContent("0.500");
    expect(first.querySelector('[data-metric="exact_match"]')).toHaveTextContent("yes");
    // Not answered within the time budget: no answer and no scores.
    expect(second).toHaveTextContent("not recorded");
    expect(second.querySelector('[data-metric="rouge_l"]')).toHaveTextContent("—");

    await userEvent.click(screen.getByRole("button", { name: "Next" }));
    expect(await screen.findByText("Rows 11–16 of 16")).toBeInTheDocument();
    expect(within(screen.getByTestId("predictions-table")).getAllByTestId("prediction-row")).toHaveLength(6);
    expect(screen.getByText("question 15")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Next" })).toBeDisabled();
    expect(asked).toEqual(["?offset=0&limit=10", "?offset=10&limit=10"]);

    await userEvent.click(screen.getByRole("button", { name: "Previous" }));
    expect(await screen.findByText("Rows 1–10 of 16")).toBeInTheDocument();
  });

  it("keeps a long prompt's whole text in its cell and its tooltip", async () => {
    fakePredictions();
    renderInApp(<GenerationCard run={evaluated} downloads />);
    const table = await screen.findByTestId("predictions-table");
    const prompt = table.querySelector("pre.prediction-text");
    expect(prompt?.textContent).toBe(LONG_PROMPT);
    expect(prompt).toHaveAttribute("title", LONG_PROMPT);
  });

  it("shows the predictions on a share link without downloads, which may read them", async () => {
    const asked = fakePredictions();
    renderInApp(<GenerationCard run={evaluated} downloads={false} />);
    expect(await screen.findByTestId("predictions-table")).toBeInTheDocument();
    expect(asked).toHaveLength(1);
  });

  it("shows a preference run's reward accuracy and margin, and asks for no predictions", async () => {
    let requests = 0;
    fakeNetwork(() => {
      requests += 1;
      return apiError(404, "NOT_FOUND", "not faked");
    });
    renderInApp(<GenerationCard run={run({ objective: "dpo", reward_accuracy: 0.75, reward_margin: 0.4321 })} downloads />);
    const rewards = within(screen.getByTestId("generation-card")).getByTestId("reward-scores");
    expect(rewards.querySelector('[data-score="reward_accuracy"] td')).toHaveTextContent("75.0 %");
    expect(rewards.querySelector('[data-score="reward_margin"] td')).toHaveTextContent("0.4321");
    expect(screen.queryByTestId("generation-scores")).toBeNull();
    await waitFor(() => expect(screen.queryByTestId("predictions-table")).toBeNull());
    expect(requests).toBe(0);
  });
});
