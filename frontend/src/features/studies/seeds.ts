/**
 * Mean and spread over seeds: a study cell trained with several seeds is drawn as one bold mean line inside the
 * min–max band of its seeds, so a difference between cells reads against the noise between seeds.
 */
import { withAlpha } from "../../components/charts/format";
import { firstWallTime, type Series } from "../../lib/series";
import type { RunSeriesSet } from "../metrics";

/** One seed's run: its series by metric key. */
export type SeedSeries = Readonly<Record<string, Series>>;

/**
 * The mean of the seeds' series of one key at each step any of them logged, with the lowest and highest value
 * there as the band. A step some seeds did not log is the mean of those that did; a step no seed has a finite value
 * at is a gap. Wall times are seconds since each seed's own first point, averaged, so the time axis of the mean
 * starts where its seeds start, however far apart they ran.
 */
export function meanOverSeeds(key: string, seeds: readonly { series: Series; origin: number | null }[]): Series | null {
  const present = seeds.filter((s) => s.series.step.length > 0);
  if (present.length === 0) return null;
  const byStep = new Map<number, { values: number[]; elapsed: number[] }>();
  for (const { series, origin } of present) {
    series.step.forEach((step, i) => {
      let at = byStep.get(step);
      if (!at) byStep.set(step, (at = { values: [], elapsed: [] }));
      const value = series.value[i];
      if (value !== null && Number.isFinite(value)) at.values.push(value);
      const wall = series.wall_time[i];
      if (origin !== null && Number.isFinite(wall)) at.elapsed.push(wall - origin);
    });
  }
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  const out: Series = { key, downsampled: present.some((s) => s.series.downsampled), step: [], value: [], wall_time: [], min: [], max: [] };
  for (const step of steps) {
    const { values, elapsed } = byStep.get(step)!;
    out.step.push(step);
    out.value.push(values.length ? values.reduce((a, b) => a + b, 0) / values.length : null);
    out.min!.push(values.length ? Math.min(...values) : null);
    out.max!.push(values.length ? Math.max(...values) : null);
    out.wall_time.push(elapsed.length ? elapsed.reduce((a, b) => a + b, 0) / elapsed.length : NaN);
  }
  return out;
}

/** Every key of the seeds' runs averaged over them (the tokens-seen series too, so the tokens axis places the mean). */
export function meanSeriesOverSeeds(seeds: readonly SeedSeries[]): Record<string, Series> {
  const origins = seeds.map((seed) => firstWallTime(Object.values(seed)));
  const keys = new Set(seeds.flatMap((seed) => Object.keys(seed)));
  const out: Record<string, Series> = {};
  for (const key of keys) {
    const inputs = seeds.flatMap((seed, i) => (seed[key] ? [{ series: seed[key], origin: origins[i] }] : []));
    const mean = meanOverSeeds(key, inputs);
    if (mean) out[key] = mean;
  }
  return out;
}

/** `finished`: the run succeeded; only finished seeds go into a cell's mean and band. */
export type StudyRunSeries = { runId: number; seed: number; cell: string; color: string; series: SeedSeries; finished: boolean };

/**
 * What a study's charts draw: a cell of one seed is its run's line; a cell of several is a thin, faint line per
 * seed and a bold mean line in the band of their spread over the seeds that finished. A running seed is drawn but
 * not averaged in: its early steps would pull the mean where only it has reached, and its label says so
 * ("mean of 1 of 2 seeds"). A cell with no finished seed has no mean.
 */
export function studySeriesSets(runs: readonly StudyRunSeries[]): RunSeriesSet[] {
  const cells = new Map<string, StudyRunSeries[]>();
  for (const run of runs) cells.set(run.cell, [...(cells.get(run.cell) ?? []), run]);
  const out: RunSeriesSet[] = [];
  let meanIndex = 0;
  for (const [cell, seeds] of cells) {
    const several = seeds.length > 1;
    for (const run of seeds) {
      out.push({
        runId: run.runId,
        label: `${cell} · seed ${run.seed}`,
        color: several ? withAlpha(run.color, 0.45) : run.color,
        series: run.series,
        ...(several && { width: 1 }),
      });
    }
    const finished = seeds.filter((run) => run.finished);
    if (several && finished.length > 0) {
      meanIndex += 1;
      const of = finished.length === seeds.length ? `${seeds.length}` : `${finished.length} of ${seeds.length}`;
      out.push({
        // Not a run: a negative id no run has.
        runId: -meanIndex,
        label: `${cell} · mean of ${of} seeds`,
        color: seeds[0].color,
        series: meanSeriesOverSeeds(finished.map((run) => run.series)),
        width: 2.5,
        band: true,
      });
    }
  }
  return out;
}
