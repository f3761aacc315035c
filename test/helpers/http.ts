import { once } from 'node:events';
import { type Dispatcher, request } from 'undici';

/** What a client saw: status, headers, the body as bytes and as text, and how long it took. */
export interface Answer {
  readonly status: number;
  readonly headers: Dispatcher.ResponseData['headers'];
  readonly body: Buffer;
  readonly text: string;
  readonly ms: number;
}

export interface SendOptions {
  readonly method?: Dispatcher.HttpMethod | string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

/** One real HTTP request with undici, read to the end. */
export async function send(url: string, options: SendOptions = {}): Promise<Answer> {
  const started = performance.now();
  const res = await request(url, {
    method: (options.method ?? 'GET') as Dispatcher.HttpMethod,
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return {
    status: res.statusCode,
    headers: res.headers,
    body,
    text: body.toString('utf8'),
    ms: performance.now() - started,
  };
}

/** Starts `server` listening on 127.0.0.1 and a free port; resolves with its `http://` origin. */
export async function listenLocal(server: import('node:net').Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
}
