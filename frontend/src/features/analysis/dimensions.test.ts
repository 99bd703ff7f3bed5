// The analysis view's decisions, on runs shaped as the API returns them: which runs are drawn, which dimensions
// become axes, their scales and labels, colours, brushes and the scatter's points.
import { describe, expect, it } from "vitest";

import type { Run } from "../../api/client";
import {
  FIGURES,
  NO_VALUE_COLOR,
  RAMP,
  axisPosition,
  axisTitle,
  brushExtent,
  brushFromPositions,
  buildAxis,
  chosenOr,
  defaultColorKey,
  defaultScatterX,
  defaultScatterY,
  drawOrder,
  extractDimensions,
  formatPrecise,
  formatRunValue,
  inAllBrushes,
  inBrush,
  isDrawable,
  isLogScale,
  notDrawnReason,
  paddedDomain,
  rampColor,
  runColor,
  runParams,
  scatterPoints,
  splitRuns,
  tickLabels,
  type CategoricalAxis,
  type Dimension,
  type NumericAxis,
} from "./dimensions";

type RunOverrides = Partial<Omit<Run, "progress">> & { params?: Record<string, unknown>; progress?: Partial<Run["progress"]> };

function run(id: number, { params = {}, progress = {}, ...rest }: RunOverrides = {}): Run {
  return {
    id,
    name: `run-${id}`,
    status: "succeeded",
    objective: "sft",
    method: "lora",
    model: "tunelab-tiny",
    seed: 1,
    project_id: 1,
    dataset_id: 1,
    config: { objective: "sft", method: "lora", dataset: { id: 1, name: "alpaca-mini" }, params },
    progress: { current_step: 60, total_steps: 60, eta_seconds: null, percent: 100, ...progress },
    best_eval_loss: null,
    final_eval_loss: null,
    trainable_percent: null,
    peak_memory_bytes: null,
    tokens_per_second: null,
    wall_time_s: null,
    ...rest,
  } as unknown as Run;
}

function dimension(dimensions: Dimension[], key: string): Dimension {
  const found = dimensions.find((d) => d.key === key);
  if (!found) throw new Error(`no dimension ${key} in ${dimensions.map((d) => d.key).join(", ")}`);
  return found;
}

function numericAxis(runs: Run[], key: string): NumericAxis {
  const axis = buildAxis(dimension(extractDimensions(runs), key), runs);
  if (axis.kind !== "numeric") throw new Error(`${key} is not numeric`);
  return axis;
}

describe("which runs are drawn", () => {
  it("draws succeeded runs only", () => {
    expect(isDrawable({ status: "succeeded" })).toBe(true);
    for (const status of ["queued", "running", "failed", "canceled"] as const) expect(isDrawable({ status })).toBe(false);
  });

  it("says where a run that is not drawn stands", () => {
    const at = (status: Run["status"], current_step: number, total_steps: number | null) =>
      notDrawnReason(run(1, { status, progress: { current_step, total_steps } }));
    expect(at("running", 40, 60)).toBe("running, step 40 of 60");
    expect(at("running", 3, null)).toBe("running, step 3");
    expect(at("queued", 0, 60)).toBe("queued");
    expect(at("failed", 12, 60)).toBe("failed at step 12 of 60");
    expect(at("canceled", 0, 60)).toBe("canceled before its first step");
  });

  it("splits runs into drawn and not drawn, keeping their order", () => {
    const runs = [run(3), run(12, { status: "running", progress: { current_step: 40 } }), run(5), run(7, { status: "failed", best_eval_loss: 0.1 })];
    const { drawn, notDrawn } = splitRuns(runs);
    expect(drawn.map((r) => r.id)).toEqual([3, 5]);
    expect(notDrawn.map(({ run: r, reason }) => [r.id, reason])).toEqual([
      [12, "running, step 40 of 60"],
      [7, "failed at step 60 of 60"],
    ]);
  });
});

describe("extractDimensions", () => {
  it("reads params from config.params, and none from a config without them", () => {
    expect(runParams(run(1, { params: { lora_r: 8 } }))).toEqual({ lora_r: 8 });
    expect(runParams({ config: {} })).toEqual({});
    expect(runParams({ config: { params: [1, 2] } })).toEqual({});
  });

  it("makes an axis of each param that varies, numeric or categorical, and skips the ones that do not", () => {
    const runs = [
      run(1, { params: { learning_rate: 1e-4, lora_r: 8, max_steps: 60, lr_scheduler_type: "cosine", packing: false } }),
      run(2, { params: { learning_rate: 3e-4, lora_r: 16, max_steps: 60, lr_scheduler_type: "linear", packing: true } }),
    ];
    const dims = extractDimensions(runs);
    expect(dims.filter((d) => d.group === "param").map((d) => [d.key, d.kind])).toEqual([
      ["param:learning_rate", "numeric"],
      ["param:lora_r", "numeric"],
      ["param:lr_scheduler_type", "categorical"],
      ["param:packing", "categorical"],
    ]);
    expect(formatRunValue(dimension(dims, "param:packing"), runs[1])).toBe("true");
  });

  it("counts a param one run sets and another does not as varying, and its absence as no value", () => {
    const runs = [run(1, { method: "lora", params: { r: 8 } }), run(2, { method: "ia3", params: {} })];
    const dims = extractDimensions(runs);
    const r = dimension(dims, "param:r");
    expect(r.kind).toBe("numeric");
    expect(r.read(runs[1])).toBeNull();
    expect(buildAxis(r, runs).hasMissing).toBe(true);
  });

  it("makes a param categorical when one run sets it to something that is not a number", () => {
    const runs = [run(1, { params: { target_modules: ["q_proj", "v_proj"] } }), run(2, { params: { target_modules: "all-linear" } })];
    const d = dimension(extractDimensions(runs), "param:target_modules");
    expect(d.kind).toBe("categorical");
    expect(d.read(runs[0])).toBe('["q_proj","v_proj"]');
  });

  it("adds method, objective, model and dataset as categorical axes only when they differ", () => {
    const same = extractDimensions([run(1), run(2)]);
    expect(same.filter((d) => d.key.startsWith("run:"))).toEqual([]);
    const mixed = extractDimensions([run(1, { method: "lora", objective: "sft" }), run(2, { method: "ia3", objective: "dpo", model: "gpt2" })]);
    expect(mixed.filter((d) => d.key.startsWith("run:")).map((d) => [d.key, d.kind])).toEqual([
      ["run:objective", "categorical"],
      ["run:method", "categorical"],
      ["run:model", "categorical"],
    ]);
  });

  it("adds each figure at least one run reports, from the run's summary and its generation eval", () => {
    const scores = { rouge_l: 0.41, exact_match: 0.2, bleu: 17.5, rows: 10 };
    const runs = [
      run(1, { best_eval_loss: 1.2, generation_eval: { base: null, tuned: scores, rows_requested: 10 } }),
      run(2, { best_eval_loss: 1.4, peak_memory_bytes: 2 ** 30 }),
    ];
    const dims = extractDimensions(runs);
    expect(dims.filter((d) => d.group === "figure").map((d) => d.key)).toEqual([
      "figure:best_eval_loss",
      "figure:rouge_l",
      "figure:exact_match",
      "figure:bleu",
      "figure:peak_memory_bytes",
    ]);
    expect(dimension(dims, "figure:rouge_l").read(runs[1])).toBeNull();
    expect(formatRunValue(dimension(dims, "figure:peak_memory_bytes"), runs[1])).toBe("1.0 GiB");
  });

  it("ignores a figure that is not a finite number", () => {
    const dims = extractDimensions([run(1, { best_eval_loss: Number.NaN }), run(2, { tokens_per_second: Number.POSITIVE_INFINITY })]);
    expect(dims).toEqual([]);
  });

  it("knows which way each figure is better", () => {
    const better = Object.fromEntries(FIGURES.map((d) => [d.key, d.better]));
    expect(better["figure:best_eval_loss"]).toBe("lower");
    expect(better["figure:rouge_l"]).toBe("higher");
    expect(better["figure:trainable_percent"]).toBeNull();
  });
});

describe("scales", () => {
  it("takes a log scale for positive values spanning two decades or more", () => {
    expect(isLogScale([1e-5, 1e-4, 2e-3])).toBe(true);
    expect(isLogScale([1e-5, 1e-3])).toBe(true);
    expect(isLogScale([1e-4, 9e-3])).toBe(false);
    expect(isLogScale([0, 1e-4, 1e-1])).toBe(false);
    expect(isLogScale([-1, 1000])).toBe(false);
    expect(isLogScale([5])).toBe(false);
  });

  it("pads a one-value domain so that its point is inside the axis", () => {
    expect(paddedDomain([2, 4], false)).toEqual([2, 4]);
    expect(paddedDomain([2], false)).toEqual([1.8, 2.2]);
    expect(paddedDomain([0, 0], false)).toEqual([-1, 1]);
    expect(paddedDomain([1e-4], true)).toEqual([5e-5, 2e-4]);
    expect(paddedDomain([], false)).toEqual([0, 1]);
  });

  it("places a learning rate sweep on a log axis, evenly by decade", () => {
    const runs = [1e-5, 1e-4, 1e-3].map((lr, i) => run(i + 1, { params: { learning_rate: lr } }));
    const axis = numericAxis(runs, "param:learning_rate");
    expect(axis.log).toBe(true);
    expect(axisTitle(axis)).toBe("learning_rate (log)");
    expect(runs.map((r) => axisPosition(axis, r))).toEqual([0, 0.5, 1]);
  });

  it("places a linear axis proportionally and a lone value in the middle", () => {
    const runs = [8, 16, 32].map((r, i) => run(i + 1, { params: { lora_r: r }, best_eval_loss: 1.5 }));
    const r = numericAxis(runs, "param:lora_r");
    expect(r.log).toBe(false);
    expect(runs.map((x) => axisPosition(r, x))).toEqual([0, 1 / 3, 1]);
    const loss = numericAxis(runs, "figure:best_eval_loss");
    expect(axisPosition(loss, runs[0])).toBeCloseTo(0.5);
  });

  it("spaces categories evenly in natural order, none on an end, and a run without one at no position", () => {
    const runs = [run(1, { params: { r: "10" } }), run(2, { params: { r: "2" } }), run(3, { params: { r: "x" } }), run(4)];
    const axis = buildAxis(dimension(extractDimensions(runs), "param:r"), runs) as CategoricalAxis;
    expect(axis.kind).toBe("categorical");
    expect(axis.categories).toEqual(["2", "10", "x"]);
    expect(runs.map((x) => axisPosition(axis, x))).toEqual([0.5, 1 / 6, 5 / 6, null]);
    expect(axis.hasMissing).toBe(true);
  });
});

describe("tick labels", () => {
  it("formats numbers in as many significant digits as asked, in exponent form when small or large", () => {
    expect(formatPrecise(0.000123456, 3)).toBe("1.23e-4");
    expect(formatPrecise(0.5, 3)).toBe("0.5");
    expect(formatPrecise(123456, 2)).toBe("1.2e+5");
    expect(formatPrecise(0, 4)).toBe("0");
  });

  it("keeps the usual format where the two ends already differ", () => {
    expect(tickLabels([1e-5, 1e-3], "number")).toEqual(["1.00e-5", "0.001"]);
    expect(tickLabels([0.9, 1.25], "number")).toEqual(["0.9", "1.25"]);
    expect(tickLabels([60, 3600], "duration")).toEqual(["1 min 0 s", "1 h 0 min"]);
  });

  it("adds digits until ends that differ read differently", () => {
    expect(tickLabels([2e-4, 2.0001e-4], "number")).toEqual(["2.0000e-4", "2.0001e-4"]);
    expect(tickLabels([1.00001, 1.00002], "number")).toEqual(["1.00001", "1.00002"]);
    const [lo, hi] = tickLabels([1_073_741_824, 1_073_841_824], "bytes");
    expect(lo).not.toBe(hi);
    expect(lo.endsWith(" B")).toBe(true);
  });

  it("labels a padded one-value axis at its padded ends", () => {
    const runs = [run(1, { best_eval_loss: 2 })];
    expect(numericAxis(runs, "figure:best_eval_loss").ticks).toEqual(["1.8", "2.2"]);
  });
});

describe("colour", () => {
  it("runs along the ramp from its first stop to its last", () => {
    expect(rampColor(0)).toBe(RAMP[0]);
    expect(rampColor(1)).toBe(RAMP[RAMP.length - 1]);
    expect(rampColor(-3)).toBe(RAMP[0]);
    expect(rampColor(0.5)).toBe(RAMP[2]);
    expect(rampColor(0.125)).toMatch(/^#[0-9a-f]{6}$/);
  });

  it("colours a run by its position on the colour axis, grey without a value", () => {
    const runs = [run(1, { best_eval_loss: 1 }), run(2, { best_eval_loss: 3 }), run(3, { tokens_per_second: 100 })];
    const axis = numericAxis(runs, "figure:best_eval_loss");
    expect(runColor(axis, runs[0])).toBe(RAMP[0]);
    expect(runColor(axis, runs[1])).toBe(RAMP[RAMP.length - 1]);
    expect(runColor(axis, runs[2])).toBe(NO_VALUE_COLOR);
    expect(runColor(null, runs[0])).toBe(NO_VALUE_COLOR);
  });

  it("draws the best runs last, so they lie on top, and runs without a value first", () => {
    const runs = [run(1, { best_eval_loss: 1, tokens_per_second: 5 }), run(2, { best_eval_loss: 3, tokens_per_second: 50 }), run(3, { tokens_per_second: 9 })];
    expect(drawOrder(runs, numericAxis(runs, "figure:best_eval_loss")).map((r) => r.id)).toEqual([3, 2, 1]);
    expect(drawOrder(runs, numericAxis(runs, "figure:tokens_per_second")).map((r) => r.id)).toEqual([1, 3, 2]);
    expect(drawOrder(runs, null).map((r) => r.id)).toEqual([1, 2, 3]);
  });
});

describe("choices", () => {
  const runs = [
    run(1, { params: { learning_rate: 1e-4, lora_r: 8 }, best_eval_loss: 1, tokens_per_second: 4 }),
    run(2, { params: { learning_rate: 2e-4, lora_r: 16 }, best_eval_loss: 2, tokens_per_second: 5 }),
  ];
  const dims = extractDimensions(runs);

  it("colours by best eval loss, or else the first figure, or nothing", () => {
    expect(defaultColorKey(dims)).toBe("figure:best_eval_loss");
    expect(defaultColorKey(extractDimensions([run(1, { tokens_per_second: 3 })]))).toBe("figure:tokens_per_second");
    expect(defaultColorKey(extractDimensions([run(1, { params: { r: 1 } }), run(2, { params: { r: 2 } })]))).toBeNull();
  });

  it("puts learning rate against best eval loss on the scatter by default", () => {
    expect(defaultScatterX(dims)).toBe("param:learning_rate");
    expect(defaultScatterY(dims, "param:learning_rate")).toBe("figure:best_eval_loss");
    expect(defaultScatterY(dims, "figure:best_eval_loss")).toBe("figure:tokens_per_second");
    // No param varies: x is a figure.
    expect(defaultScatterX(extractDimensions([run(1, { best_eval_loss: 1 })]))).toBe("figure:best_eval_loss");
  });

  it("keeps a choice while its dimension exists, and falls back when it goes", () => {
    expect(chosenOr(dims, "param:lora_r", "param:learning_rate")).toBe("param:lora_r");
    expect(chosenOr(dims, "param:gone", "param:learning_rate")).toBe("param:learning_rate");
    expect(chosenOr(dims, null, "param:learning_rate")).toBe("param:learning_rate");
  });
});

describe("brushes", () => {
  const runs = [1e-5, 1e-4, 1e-3].map((lr, i) => run(i + 1, { params: { learning_rate: lr, method: ["a", "b", "c"][i] } }));
  const dims = extractDimensions(runs);
  const lr = buildAxis(dimension(dims, "param:learning_rate"), runs) as NumericAxis;
  const method = buildAxis(dimension(dims, "param:method"), runs) as CategoricalAxis;

  it("turns a drag on a log axis into a range of values, whichever way it went", () => {
    const brush = brushFromPositions(lr, 0.75, 0.25);
    expect(brush?.kind).toBe("range");
    if (brush?.kind !== "range") return;
    expect(brush.lo).toBeCloseTo(10 ** -4.5);
    expect(brush.hi).toBeCloseTo(10 ** -3.5);
    expect(runs.map((r) => inBrush(lr, brush, r))).toEqual([false, true, false]);
    const [bottom, top] = brushExtent(lr, brush) ?? [];
    expect(bottom).toBeCloseTo(0.25);
    expect(top).toBeCloseTo(0.75);
  });

  it("keeps the runs of a range when the axis rescales", () => {
    const brush = brushFromPositions(lr, 0.4, 0.6)!;
    const more = [...runs, run(4, { params: { learning_rate: 1e-1 } })];
    const wider = buildAxis(dimension(extractDimensions(more), "param:learning_rate"), more);
    expect(more.map((r) => inBrush(wider, brush, r))).toEqual([false, true, false, false]);
  });

  it("turns a drag on a categorical axis into the categories it crossed, or none", () => {
    const brush = brushFromPositions(method, 0, 0.4);
    expect(brush).toEqual({ kind: "categories", values: ["a"] });
    expect(brushFromPositions(method, 0.2, 0.3)).toBeNull();
    expect(brushExtent(method, brush!)).toEqual([0, 1 / 3]);
    expect(runs.map((r) => inBrush(method, brush!, r))).toEqual([true, false, false]);
  });

  it("keeps a run only when it lies in every brush on a shown axis", () => {
    const brushes = { "param:learning_rate": brushFromPositions(lr, 0, 0.6)!, "param:method": { kind: "categories" as const, values: ["b", "c"] } };
    expect(runs.map((r) => inAllBrushes([lr, method], brushes, r))).toEqual([false, true, false]);
    // A brush on a hidden axis does not count.
    expect(runs.map((r) => inAllBrushes([lr], brushes, r))).toEqual([true, true, false]);
  });

  it("leaves out a run without a value on a brushed axis", () => {
    const withGap = [...runs, run(9, { params: { method: "a" } })];
    const axis = buildAxis(dimension(extractDimensions(withGap), "param:learning_rate"), withGap);
    expect(inBrush(axis, { kind: "range", lo: 0, hi: 1 }, withGap[3])).toBe(false);
  });
});

describe("scatterPoints", () => {
  it("places succeeded runs with both values, lists the succeeded ones lacking one, and never places the others", () => {
    const runs = [
      run(1, { params: { learning_rate: 1e-4 }, best_eval_loss: 1.2 }),
      run(2, { params: { learning_rate: 2e-4 }, best_eval_loss: 1.1 }),
      run(3, { params: { learning_rate: 3e-4 } }),
      run(4, { status: "running", params: { learning_rate: 4e-4 }, best_eval_loss: 0.2 }),
    ];
    const drawn = splitRuns(runs).drawn;
    const dims = extractDimensions(drawn);
    const x = buildAxis(dimension(dims, "param:learning_rate"), drawn);
    const y = buildAxis(dimension(dims, "figure:best_eval_loss"), drawn);
    const { points, missing } = scatterPoints(runs, x, y);
    expect(points.map((p) => p.run.id)).toEqual([1, 2]);
    expect(points[0].x).toBeCloseTo(0);
    expect(points[0].y).toBeCloseTo(1);
    expect(missing.map(({ run: r, reason }) => [r.id, reason])).toEqual([[3, "no Best eval loss"]]);
  });

  it("puts a single run in the middle of both axes", () => {
    const runs = [run(1, { best_eval_loss: 1.2, tokens_per_second: 900 })];
    const dims = extractDimensions(runs);
    const x = buildAxis(dimension(dims, "figure:tokens_per_second"), runs);
    const y = buildAxis(dimension(dims, "figure:best_eval_loss"), runs);
    const [point] = scatterPoints(runs, x, y).points;
    expect(point.x).toBeCloseTo(0.5);
    expect(point.y).toBeCloseTo(0.5);
  });
});
