/**
 * The live log's filters, in the grammar of `GET /history`'s (history-filter.ts) so that one
 * filter reads the same in both places: `path` whole, or its start when it ends with `*`; a status
 * class; a fault kind, `none` (no fault) or `any` (at least one); a session, exactly.
 */
import type { LiveRow } from '../live-row.ts';

export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** What the toolbar holds; an empty field filters nothing. */
export interface LiveFilter {
  readonly path: string;
  readonly statusClass: StatusClass | '';
  /** A fault kind, `none`, `any`, or empty. */
  readonly fault: string;
  readonly session: string;
}

export const NO_FILTER: LiveFilter = { path: '', statusClass: '', fault: '', session: '' };

/** `2xx` for 204; empty for 0 (no response) and 499 sits in `4xx` as nginx has it. */
export function statusClassOf(status: number): StatusClass | '' {
  const hundred = Math.floor(status / 100);
  return hundred >= 1 && hundred <= 5 ? STATUS_CLASSES[hundred - 1]! : '';
}

/** Whether `row` passes every filter set in `filter`. */
export function matchesFilter(row: LiveRow, filter: LiveFilter): boolean {
  const path = filter.path.trim();
  if (path !== '') {
    if (path.endsWith('*')) {
      if (!row.path.startsWith(path.slice(0, -1))) return false;
    } else if (row.path !== path) return false;
  }
  if (filter.statusClass !== '' && statusClassOf(row.status) !== filter.statusClass) return false;
  if (filter.fault === 'none' && row.faults.length > 0) return false;
  if (filter.fault === 'any' && row.faults.length === 0) return false;
  if (filter.fault !== '' && filter.fault !== 'none' && filter.fault !== 'any') {
    if (!row.faults.some((f) => f.kind === filter.fault)) return false;
  }
  const session = filter.session.trim();
  if (session !== '' && row.session !== session) return false;
  return true;
}

/** Whether any filter is set. */
export function isFiltering(filter: LiveFilter): boolean {
  return (
    filter.path.trim() !== '' ||
    filter.statusClass !== '' ||
    filter.fault !== '' ||
    filter.session.trim() !== ''
  );
}
