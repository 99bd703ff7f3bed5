/** Pure pieces of the line chart's uPlot setup: legend read-out, y-axis width, point markers and the y range. */
import uPlot from "uplot";

/** The data columns behind one legend entry: the logged values, and their EMA when smoothing is on. */
export type ReadoutColumns = { raw: number; smoothed: number | null };

/** What one legend entry shows: the logged value, and the smoothed one beside it when smoothing is on. */
export type Readout = { raw: number | null; smoothed: number | null };

type Column = ArrayLike<number | null | undefined>;

/** A series with at most this many points gets markers: a line needs two points, and a few are easier seen as dots. */
export const FEW_POINTS = 3;

export const AXIS_FONT = "11px system-ui";
/** uPlot's default tick length and tick-to-label gap, in CSS pixels. */
const AXIS_TICK = 10;
const AXIS_GAP = 5;
/** Room left of the widest label, so its first glyph is not flush with the canvas edge. */
const AXIS_MARGIN = 4;
/** The width before uPlot has formatted any label (its first sizing pass), and the least ever given. */
export const MIN_Y_AXIS_SIZE = 40;

function nearestValue(values: Column, idx: number): number | null {
  for (let d = 0; d < 200; d++) {
    const before = values[idx - d];
    if (before !== null && before !== undefined) return before;
    const after = values[idx + d];
    if (after !== null && after !== undefined) return after;
  }
  return null;
}

function lastValue(values: Column): number | null {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

/** Each legend entry's values at the cursor's index, or the latest ones when the cursor is off the plot. */
export function readValues(data: readonly Column[], columns: readonly ReadoutColumns[], idx: number | null): Readout[] {
  const read = (col: number) => (idx === null ? lastValue(data[col]) : nearestValue(data[col], idx));
  return columns.map(({ raw, smoothed }) => ({ raw: read(raw), smoothed: smoothed === null ? null : read(smoothed) }));
}

/** The y axis' width that fits its widest tick label (uPlot's fixed width cut "0.00495" to ".00495"). */
export function yAxisSize(labels: readonly string[] | null | undefined, measure: (text: string) => number): number {
  let widest = 0;
  for (const label of labels ?? []) widest = Math.max(widest, measure(label));
  return Math.max(MIN_Y_AXIS_SIZE, Math.ceil(widest) + AXIS_TICK + AXIS_GAP + AXIS_MARGIN);
}

/** Whether a series is drawn with markers: one point alone draws no line and would leave the axes empty. */
export function showsMarkers(values: Column): boolean {
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined && ++count > FEW_POINTS) return false;
  }
  return count > 0;
}

/**
 * The linear y range: uPlot's own, except around a single value (or a flat series), which uPlot stretches down to
 * zero (6.265 drawn on 0…12.6, 0 on 0…100); there it spans 10 % either side, or ±1 around zero.
 */
export function yRange(min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [null, null];
  if (min !== max) return uPlot.rangeNum(min, max, 0.1, true);
  const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
  return uPlot.rangeNum(min - pad, min + pad, 0.1, true);
}

/** An x range a chart is zoomed to; null is each chart's own full data range. */
export type XRange = { min: number; max: number } | null;

/** A chart in a zoom group: it shows the range it is given. */
export type ZoomMember = { showX: (range: XRange) => void };

/**
 * The charts of one page that zoom together on x. A user's drag zoom (or double-click reset) on one chart is applied
 * to every other; a chart that joins later (a new metric's first point, or one rebuilt for smoothing) starts at the
 * group's zoom, so neither a live update nor a redraw undoes what the user chose.
 */
export class ZoomGroup {
  private readonly members = new Set<ZoomMember>();
  private range: XRange = null;

  get current(): XRange {
    return this.range;
  }

  get size(): number {
    return this.members.size;
  }

  /** Add a chart, shown at the group's current zoom; the returned function takes it out again. */
  join(member: ZoomMember): () => void {
    this.members.add(member);
    if (this.range) member.showX(this.range);
    return () => {
      this.members.delete(member);
      if (this.members.size === 0) this.range = null;
    };
  }

  /** `from` was zoomed (or reset, with null) by the user: show the same range on every other chart. */
  zoom(from: ZoomMember, range: XRange): void {
    this.range = range && range.max > range.min ? range : null;
    for (const member of this.members) if (member !== from) member.showX(this.range);
  }
}

const zoomGroups = new Map<string, ZoomGroup>();

/** The zoom group of `key`, one per page's set of charts; an empty one is forgotten when its last chart leaves. */
export function joinZoomGroup(key: string, member: ZoomMember): { group: ZoomGroup; leave: () => void } {
  let group = zoomGroups.get(key);
  if (!group) {
    group = new ZoomGroup();
    zoomGroups.set(key, group);
  }
  const joined = group;
  const leaveGroup = joined.join(member);
  return {
    group: joined,
    leave: () => {
      leaveGroup();
      if (joined.size === 0 && zoomGroups.get(key) === joined) zoomGroups.delete(key);
    },
  };
}
