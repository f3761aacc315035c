import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { buildConnector } from 'undici';
import { EchoError } from './errors.ts';

/**
 * One entry of `ECHO_REPLAY_ALLOWED_TARGETS`: `*` (any host but the denied ones), a host name, an
 * address or a CIDR block, each but `*` and CIDRs with an optional port.
 */
export type TargetRule =
  | { readonly kind: 'any' }
  | { readonly kind: 'host'; readonly host: string; readonly subdomains?: true; readonly port?: number }
  | { readonly kind: 'cidr'; readonly text: string; readonly list: BlockList; readonly port?: number };

/** How a name is resolved: every address, as `dns.lookup(name, { all: true })` answers. */
export type ReplayResolver = (
  hostname: string,
) => Promise<ReadonlyArray<{ address: string; family: number }>>;

/** The form of `ECHO_REPLAY_ALLOWED_TARGETS`, for the README's table and startup errors. */
export const ALLOWED_TARGETS_FORM =
  'comma-separated `*`, host names (`*.example.com` for its subdomains), addresses or CIDR blocks (IPv4 or IPv6), names and addresses with an optional `:port` (IPv6 as `[::1]:8080`)';

/**
 * Addresses never dialled under `*`, whatever name leads to them: link-local (where cloud metadata
 * services live) and the metadata and platform addresses outside it. Listing one explicitly allows it.
 */
const DENIED = new BlockList();
DENIED.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local; AWS, GCP, Azure, OpenStack, Oracle metadata
DENIED.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
DENIED.addAddress('168.63.129.16', 'ipv4'); // Azure platform (WireServer)
DENIED.addSubnet('fe80::', 10, 'ipv6'); // link-local
DENIED.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

/** Names of metadata services, refused under `*` before any resolution (listing one allows it). */
const DENIED_NAMES: ReadonlySet<string> = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Parses `ECHO_REPLAY_ALLOWED_TARGETS`; undefined when an entry is not one of the forms. */
export function parseAllowedTargets(raw: string): TargetRule[] | undefined {
  const rules: TargetRule[] = [];
  for (const item of raw.split(',')) {
    const entry = item.trim().toLowerCase();
    if (entry === '') return undefined;
    const rule = parseRule(entry);
    if (rule === undefined) return undefined;
    rules.push(rule);
  }
  return rules;
}

function parseRule(entry: string): TargetRule | undefined {
  if (entry === '*') return { kind: 'any' };
  const slash = entry.indexOf('/');
  if (slash !== -1) {
    const address = entry.slice(0, slash);
    const bits = entry.slice(slash + 1);
    const family = isIP(address);
    if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return undefined;
    const list = new BlockList();
    list.addSubnet(address, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
    return { kind: 'cidr', text: entry, list };
  }
  let host = entry;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  if (bracketed !== null) {
    host = bracketed[1] as string;
    if (isIP(host) !== 6) return undefined;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if (isIP(entry) !== 6) {
    const colon = entry.lastIndexOf(':');
    if (colon !== -1) {
      if (!/^\d{1,5}$/.test(entry.slice(colon + 1))) return undefined;
      host = entry.slice(0, colon);
      port = Number(entry.slice(colon + 1));
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const family = isIP(host);
  const withPort = port === undefined ? {} : { port };
  if (family !== 0) {
    const list = new BlockList();
    list.addAddress(host, family === 4 ? 'ipv4' : 'ipv6');
    return { kind: 'cidr', text: entry, list, ...withPort };
  }
  const name = host.replace(/\.$/, '');
  if (name.startsWith('*.')) {
    const parent = name.slice(2);
    return HOST_NAME.test(parent) ? { kind: 'host', host: parent, subdomains: true, ...withPort } : undefined;
  }
  return HOST_NAME.test(name) ? { kind: 'host', host: name, ...withPort } : undefined;
}

/**
 * The address an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) IPv6 address stands
 * for, so `::ffff:169.254.169.254` is checked as `169.254.169.254`; any other address as it is.
 */
export function effectiveAddress(raw: string): { address: string; family: 'ipv4' | 'ipv6' } {
  // A zone (`fe80::1%eth0`) does not change which block the address is in.
  const address = raw.replace(/%.*$/, '');
  if (isIP(address) === 4) return { address, family: 'ipv4' };
  const words = expandIPv6(address);
  if (words !== undefined) {
    // IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765), the well-known
    // NAT64 prefix (64:ff9b::/96, RFC 6052) and the local-use one (64:ff9b:1::/48, RFC 8215, read
    // as a /96, its most common length): all reach the IPv4 address in their last 32 bits.
    const mapped = words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff;
    const translated = words.slice(0, 4).every((w) => w === 0) && words[4] === 0xffff && words[5] === 0;
    const nat64 = words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0);
    const localNat64 = words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1;
    if (mapped || translated || nat64 || localNat64) {
      const hi = words[6] as number;
      const lo = words[7] as number;
      return { address: `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`, family: 'ipv4' };
    }
  }
  return { address, family: 'ipv6' };
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted quad included), or undefined. */
function expandIPv6(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.replace(/%.*$/, '');
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((w) => Number.parseInt(w, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = 8 - left.length - right.length;
  return [...left, ...new Array<number>(tail === undefined ? 0 : zeros).fill(0), ...right];
}

const defaultResolver: ReplayResolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * Decides where `POST /replay` may connect (`ECHO_REPLAY_ALLOWED_TARGETS`). A host name listed
 * explicitly is trusted with whatever it resolves to; any other target is judged by every address
 * its name resolves to: each must be listed, or, under `*`, be none of the link-local and metadata
 * addresses. The address checked is the address dialled ({@link createGuardedConnector}), so a name
 * that resolves differently the second time (DNS rebinding) cannot slip past.
 */
export class ReplayGuard {
  readonly #rules: readonly TargetRule[];
  readonly #resolve: ReplayResolver;
  readonly #any: boolean;

  constructor(rules: readonly TargetRule[], resolve: ReplayResolver = defaultResolver) {
    this.#rules = rules;
    this.#resolve = resolve;
    this.#any = rules.some((r) => r.kind === 'any');
  }

  /**
   * The addresses to dial for `hostname:port`, in the resolver's order, once every address of the
   * name passed the rules; otherwise an `ECHO_ERR_REPLAY_TARGET_REFUSED` error, before any
   * connection is attempted.
   */
  async resolveChecked(hostname: string, port: number): Promise<string[]> {
    const host = hostname
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, '')
      .toLowerCase();
    const shown = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
    const trusted = this.#rules.some(
      (r) =>
        r.kind === 'host' &&
        (r.subdomains ? host.endsWith(`.${r.host}`) : r.host === host) &&
        (r.port === undefined || r.port === port),
    );
    if (!trusted && this.#any && isIP(host) === 0 && DENIED_NAMES.has(host)) {
      throw new EchoError('ECHO_ERR_REPLAY_TARGET_REFUSED', [shown, 'it names a cloud metadata service']);
    }
    const addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await this.#resolve(host);
    if (addresses.length === 0) throw new EchoError('ECHO_ERR_UPSTREAM_UNREACHABLE', [`${host}: no address`]);
    if (!trusted) {
      for (const { address } of addresses) {
        const why = this.#refusal(address, port);
        if (why !== undefined)
          throw new EchoError('ECHO_ERR_REPLAY_TARGET_REFUSED', [
            shown,
            address === host ? why : `it resolves to ${address}: ${why}`,
          ]);
      }
    }
    return [...new Set(addresses.map((a) => a.address))];
  }

  /** Why `address` may not be dialled on `port`, or undefined when it may. */
  #refusal(raw: string, port: number): string | undefined {
    const { address, family } = effectiveAddress(raw);
    // A mapped address listed as IPv6 (`::ffff:10.0.0.1`) still matches its own rule.
    const bare = raw.replace(/%.*$/, '');
    const listed = this.#rules.some(
      (r) =>
        r.kind === 'cidr' &&
        (r.port === undefined || r.port === port) &&
        (r.list.check(address, family) || r.list.check(bare, isIP(bare) === 4 ? 'ipv4' : 'ipv6')),
    );
    if (listed) return undefined;
    if (!this.#any) return 'not in ECHO_REPLAY_ALLOWED_TARGETS';
    if (DENIED.check(address, family)) {
      return 'a link-local or cloud metadata address (list it in ECHO_REPLAY_ALLOWED_TARGETS to allow it)';
    }
    return undefined;
  }
}

/** Connection failures after which the next checked address of the name is tried. */
const TRY_NEXT = new Set(['ECONNREFUSED', 'ENETUNREACH', 'EHOSTUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT']);

/**
 * An undici connector that dials only what `guard` allows: it resolves the origin's host, checks
 * every address, and connects to the checked ones in turn (the next when one refuses or is
 * unreachable, as a dual-stack name needs); TLS still verifies and sends SNI for the name. A refusal
 * fails the connection before a socket exists, so nothing reaches the target.
 */
export function createGuardedConnector(
  undici: Pick<typeof import('undici'), 'buildConnector' | 'errors'>,
  guard: ReplayGuard,
  options: buildConnector.BuildOptions & { timeout: number },
): buildConnector.connector {
  const { buildConnector, errors } = undici;
  const connect = buildConnector(options);
  return (opts, callback) => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const timeout = AbortSignal.timeout(options.timeout);
    const checked = guard.resolveChecked(opts.hostname, port);
    const expired = new Promise<never>((_resolve, reject) =>
      timeout.addEventListener('abort', () => reject(new errors.ConnectTimeoutError()), { once: true }),
    );
    const attempt = (addresses: readonly string[], i: number): void => {
      connect({ ...opts, hostname: addresses[i] as string }, (error, socket) => {
        const code = (error as { code?: string } | null)?.code;
        if (error !== null && i + 1 < addresses.length && code !== undefined && TRY_NEXT.has(code)) {
          attempt(addresses, i + 1);
        } else if (error !== null) callback(error, null);
        else callback(null, socket as NonNullable<typeof socket>);
      });
    };
    Promise.race([checked, expired]).then(
      (addresses) => attempt(addresses, 0),
      (error: Error) => callback(error, null),
    );
  };
}
