// What uPlot needs from a browser that jsdom does not have: a 2D canvas context (drawing does nothing here; text is
// measured at 6 px a character), Path2D, matchMedia and ResizeObserver. A chart test imports this before rendering.

function fakeContext(canvas: HTMLCanvasElement): CanvasRenderingContext2D {
  const state: Record<string | symbol, unknown> = { canvas, font: "10px sans-serif" };
  return new Proxy(state, {
    get(target, key) {
      if (key in target) return target[key];
      if (key === "measureText") return (text: string) => ({ width: text.length * 6 });
      if (key === "getLineDash") return () => [];
      if (key === "createLinearGradient" || key === "createPattern") return () => ({ addColorStop() {} });
      return () => undefined;
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
  }) as unknown as CanvasRenderingContext2D;
}

const contexts = new WeakMap<HTMLCanvasElement, CanvasRenderingContext2D>();
HTMLCanvasElement.prototype.getContext = function getContext(this: HTMLCanvasElement, kind: string) {
  if (kind !== "2d") return null;
  if (!contexts.has(this)) contexts.set(this, fakeContext(this));
  return contexts.get(this)!;
} as HTMLCanvasElement["getContext"];

class FakePath2D {
  moveTo() {}
  lineTo() {}
  rect() {}
  arc() {}
  closePath() {}
  bezierCurveTo() {}
  quadraticCurveTo() {}
  addPath() {}
}
globalThis.Path2D ??= FakePath2D as unknown as typeof Path2D;

window.matchMedia ??= ((query: string) => ({
  matches: false,
  media: query,
  onchange: null,
  addListener() {},
  removeListener() {},
  addEventListener() {},
  removeEventListener() {},
  dispatchEvent: () => false,
})) as typeof window.matchMedia;

class FakeResizeObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
}
globalThis.ResizeObserver ??= FakeResizeObserver as unknown as typeof ResizeObserver;
