import { hostname } from 'node:os';
import pkg from '../../package.json' with { type: 'json' };

/** The service version, as `/info` and `X-Echo-Version` report it. */
export const VERSION: string = pkg.version;
/** The host name, as `/info` and `X-Echo-Server` report it. */
export const HOSTNAME: string = hostname();

/** `3725.2` seconds → `1h2m5s`. */
export function formatUptime(seconds: number): string {
  let s = Math.floor(seconds);
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${d > 0 ? `${d}d` : ''}${d > 0 || h > 0 ? `${h}h` : ''}${d > 0 || h > 0 || m > 0 ? `${m}m` : ''}${s}s`;
}
