/** Reading Prometheus series from a running echo's `/metrics`, for tests. */

/** The value of one series (`name{labels}` exactly as exposed) in a scrape; 0 when absent. */
export function seriesValue(text: string, series: string): number {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return 0;
}

/** Scrapes `<base>/metrics` and reads one series. */
export async function scrapeValue(base: string, series: string): Promise<number> {
  return seriesValue(await (await fetch(`${base}/metrics`)).text(), series);
}

/** Every `echo_faults_injected_total{kind}` value of one scrape, by kind. */
export async function faultCounts(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^echo_faults_injected_total\{kind="([a-z-]+)"\} (\d+)$/gm)) {
    out[m[1] as string] = Number(m[2]);
  }
  return out;
}

/** What changed between two {@link faultCounts} readings: the kinds that moved, and by how much. */
export function countDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [kind, value] of Object.entries(after)) {
    const d = value - (before[kind] ?? 0);
    if (d !== 0) out[kind] = d;
  }
  return out;
}
