/**
 * A Lua script of the shared store (ECHO_STATE_URL), run by its SHA1 (`EVALSHA`, loaded again by
 * ioredis when Redis answers `NOSCRIPT`), so a request's step or a batch of history sends its
 * arguments, not the script's text.
 */
import type { Redis } from 'ioredis';

/** Runs the script with its `keys` first, then its arguments. */
export type Script = (...args: Array<string | number | Buffer>) => Promise<unknown>;

let defined = 0;

/** `lua`, taking `keys` keys, defined on `client` as a command of its own. */
export function defineScript(client: Redis, keys: number, lua: string): Script {
  const name = `echoChaosScript${++defined}`;
  client.defineCommand(name, { numberOfKeys: keys, lua });
  // defineCommand made `name` a method of the client; ioredis's types cannot know the name.
  const command = (client as Redis & Record<string, Script>)[name]!;
  return (...args) => command.apply(client, args);
}
