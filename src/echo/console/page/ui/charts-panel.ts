/**
 * The charts tab: requests per second, p50/p99 latency, the status mix and the requests that got
 * faults, one point a second over the last minutes, drawn with uPlot (bundled: no CDN; it styles
 * by the DOM's `element.style`, which `default-src 'self'` allows, never by a style attribute in
 * markup). The points come over the live stream (`event: points`, then `event: point`); the
 * service makes them only while a console is open, so a time nobody watched is a gap.
 */
import uPlot from 'uplot';
import type { ChartPoint } from '../../chart-point.ts';
import { byId, element } from './dom.ts';

/** Seconds shown: the service keeps as many (chart-series.ts). */
const WINDOW_SECONDS = 300;
const HEIGHT_PX = 170;

const el = {
  tab: byId('tab-charts'),
  grid: byId('c-grid'),
  summary: byId('c-summary'),
};

let points: ChartPoint[] = [];

interface Chart {
  readonly title: string;
  readonly series: uPlot.Series[];
  readonly values: (p: ChartPoint | undefined) => Array<number | null>;
  plot?: uPlot;
  box?: HTMLElement;
}

const charts: Chart[] = [
  {
    title: 'Requests per second',
    series: [{ label: 'req/s', stroke: '#0969da', width: 2, fill: 'rgba(9, 105, 218, 0.1)' }],
    values: (p) => [p?.rps ?? null],
  },
  {
    title: 'Latency (ms)',
    series: [
      { label: 'p50', stroke: '#1a7f37', width: 2 },
      { label: 'p99', stroke: '#cf222e', width: 2 },
    ],
    values: (p) => [p?.p50 ?? null, p?.p99 ?? null],
  },
  {
    title: 'Status mix (requests a second)',
    series: [
      { label: '2xx', stroke: '#1a7f37', width: 2 },
      { label: '3xx', stroke: '#0969da', width: 2 },
      { label: '4xx', stroke: '#9a6700', width: 2 },
      { label: '5xx', stroke: '#cf222e', width: 2 },
    ],
    values: (p) => (p === undefined ? [null, null, null, null] : p.status.slice(1, 5)),
  },
  {
    title: 'Requests with injected faults (a second)',
    series: [{ label: 'faulted', stroke: '#bc4c00', width: 2, fill: 'rgba(188, 76, 0, 0.1)' }],
    values: (p) => [p?.faulted ?? null],
  },
];

/**
 * The columns uPlot draws: time, then each series; a second without a point (nobody watched, or
 * the stream skipped it) is a null, which uPlot draws as a gap.
 */
function columns(chart: Chart): uPlot.AlignedData {
  const xs: number[] = [];
  const ys: Array<Array<number | null>> = chart.series.map(() => []);
  let previous: number | undefined;
  const add = (t: number, p: ChartPoint | undefined) => {
    xs.push(t);
    const values = chart.values(p);
    for (let i = 0; i < values.length; i++) ys[i]!.push(values[i] ?? null);
  };
  for (const point of points) {
    if (previous !== undefined && point.t - previous > 2) add(previous + 1, undefined);
    add(point.t, point);
    previous = point.t;
  }
  return [xs, ...ys];
}

/** A plot fills its cell of the grid (two a row on a laptop, one on a phone: console.css). */
function width(box: HTMLElement | undefined): number {
  return Math.max(200, box?.clientWidth ?? 0);
}

function draw(): void {
  if (el.tab.hidden) return;
  for (const chart of charts) {
    const data = columns(chart);
    if (chart.plot === undefined) {
      const box = element('figure', 'chart');
      box.append(element('figcaption', undefined, chart.title));
      el.grid.append(box);
      chart.box = box;
      chart.plot = new uPlot(
        {
          width: width(box),
          height: HEIGHT_PX,
          scales: { x: { time: true } },
          series: [{}, ...chart.series],
          axes: [{}, { size: 48 }],
          cursor: { drag: { x: false, y: false } },
        },
        data,
        box,
      );
    } else chart.plot.setData(data);
  }
}

function summarise(): void {
  const last = points.at(-1);
  let requests = 0;
  for (const point of points) requests += point.requests;
  el.summary.dataset['requests'] = String(requests);
  el.summary.dataset['points'] = String(points.length);
  if (last === undefined) {
    el.summary.textContent = 'No points yet: one comes every second while the console is open.';
    return;
  }
  el.summary.dataset['rps'] = String(last.rps);
  const ms = (v: number | null) => (v === null ? '–' : `${v} ms`);
  el.summary.textContent =
    `last second: ${last.rps} req/s, p50 ${ms(last.p50)}, p99 ${ms(last.p99)}, ${last.faulted} with faults` +
    ` · ${requests} requests in the ${points.length} s shown`;
}

function keepWindow(): void {
  const newest = points.at(-1)?.t;
  if (newest === undefined) return;
  const from = points.findIndex((p) => p.t > newest - WINDOW_SECONDS);
  if (from > 0) points = points.slice(from);
}

/** The window so far, as the stream sends it on connecting (again after a reconnection). */
export function chartPoints(list: readonly ChartPoint[]): void {
  points = [...list];
  keepWindow();
  summarise();
  draw();
}

/** One more second. */
export function chartPoint(point: ChartPoint): void {
  const last = points.at(-1);
  if (last !== undefined && last.t >= point.t) points[points.length - 1] = point;
  else points.push(point);
  keepWindow();
  summarise();
  draw();
}

/** The tab is shown: the plots are made (they need its width) or brought up to date. */
export function showCharts(): void {
  draw();
  resize();
}

function resize(): void {
  for (const chart of charts) chart.plot?.setSize({ width: width(chart.box), height: HEIGHT_PX });
}

new ResizeObserver(() => {
  if (!el.tab.hidden) resize();
}).observe(el.grid);
