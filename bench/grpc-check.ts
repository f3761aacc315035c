/**
 * Before the gRPC scenario of bench/run.ts loads a server, this checks that it answers the call the
 * load sends with gRPC's OK: h2load counts an HTTP 200 as a success, and a gRPC call that failed
 * (`UNIMPLEMENTED`, `INTERNAL` for a message that did not decode...) is an HTTP 200 too, its status
 * in the trailers h2load does not read. Two calls, each bounded by a 5 s deadline:
 * - a grpc-js client's `Echo` (the proto loaded as the service loads it), with an `x-request-id`;
 * - the exact bytes h2load sends (the frame and headers of `GrpcLoad`) over node:http2: the answer's
 *   `grpc-status` trailer must be 0, its one message must decode as an `EchoResponse` with the
 *   message and payload sent.
 *
 * Imported by bench/run.ts only when the scenario runs, so the other scenarios do not load grpc-js.
 */
import { connect } from 'node:http2';
import {
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  Metadata,
  type ServiceClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import { grpcMessages } from './lib.ts';

const PROTO = new URL('../proto/echochaos/v1/echo.proto', import.meta.url).pathname;
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const DEADLINE_MS = 5000;

/** What the load sends: the method's path, its HTTP/2 request headers and the body (one frame). */
export interface GrpcCall {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The request the body holds. */
  readonly message: string;
  readonly payload: Buffer;
}

interface EchoResponse {
  readonly message: string;
  readonly payload: Buffer;
  readonly metadata: Record<string, string>;
  readonly request_id: string;
  readonly sequence: number;
}

const definition = loadSync(PROTO, LOADER_OPTIONS);
const echoMethod = (
  definition['echochaos.v1.EchoService'] as Record<string, MethodDefinition<object, object>>
)['Echo'] as MethodDefinition<object, EchoResponse>;

/** The client's `Echo`, as loadPackageDefinition makes it (untyped). */
type EchoMethod = (
  request: { message: string; payload: Buffer },
  metadata: Metadata,
  options: { deadline: number },
  callback: (err: ServiceError | null, response: EchoResponse) => void,
) => unknown;

/** What is wrong with an answer to `call`, or undefined. */
function mismatch(answer: EchoResponse, call: GrpcCall, requestId?: string): string | undefined {
  if (answer.message !== call.message) return `message ${JSON.stringify(answer.message)}`;
  if (!Buffer.from(answer.payload).equals(call.payload)) return `a payload of ${answer.payload.length} bytes`;
  if (answer.sequence !== 0) return `sequence ${answer.sequence}`;
  if (requestId !== undefined && answer.request_id !== requestId) return `request_id ${answer.request_id}`;
  if (requestId !== undefined && answer.metadata['x-request-id'] !== requestId)
    return `metadata without the x-request-id sent: ${JSON.stringify(answer.metadata)}`;
  return undefined;
}

/** The grpc-js client's call. */
async function clientCall(port: number, call: GrpcCall): Promise<void> {
  const v1 = (loadPackageDefinition(definition)['echochaos'] as GrpcObject)['v1'] as GrpcObject;
  const Client = v1['EchoService'] as ServiceClientConstructor;
  const client = new Client(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
  ) as InstanceType<ServiceClientConstructor> & { Echo: EchoMethod };
  try {
    const metadata = new Metadata();
    const requestId = 'bench-grpc-check';
    metadata.set('x-request-id', requestId);
    const answer = await new Promise<EchoResponse>((resolve, reject) => {
      client.Echo(
        { message: call.message, payload: call.payload },
        metadata,
        { deadline: Date.now() + DEADLINE_MS },
        (err, response) => (err ? reject(err) : resolve(response)),
      );
    }).catch((err: ServiceError) => {
      throw new Error(`a grpc-js client's Echo on 127.0.0.1:${port} ended in ${err.code}: ${err.message}`);
    });
    const wrong = mismatch(answer, call, requestId);
    if (wrong !== undefined)
      throw new Error(`a grpc-js client's Echo on 127.0.0.1:${port} returned OK with ${wrong}`);
  } finally {
    client.close();
  }
}

/** The load's own request over node:http2: status 200, `grpc-status: 0`, the echo decoded. */
async function rawCall(port: number, call: GrpcCall): Promise<void> {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  try {
    const { status, trailers, body } = await new Promise<{
      status: number;
      trailers: Record<string, unknown>;
      body: Buffer;
    }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer in ${DEADLINE_MS} ms`)), DEADLINE_MS);
      const stream = session.request({ ':method': 'POST', ':path': call.path, ...call.headers });
      let status = 0;
      let trailers: Record<string, unknown> = {};
      const chunks: Buffer[] = [];
      stream.on('response', (headers) => {
        status = Number(headers[':status']);
        // A call that fails before any message may carry its status in the headers (trailers-only).
        if (headers['grpc-status'] !== undefined) trailers = { ...headers };
      });
      stream.on('trailers', (t) => {
        trailers = { ...t };
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        clearTimeout(timer);
        resolve({ status, trailers, body: Buffer.concat(chunks) });
      });
      stream.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      stream.end(call.body);
    });
    const where = `the load's own request (POST ${call.path} on 127.0.0.1:${port})`;
    if (status !== 200) throw new Error(`${where}: HTTP ${status}`);
    if (String(trailers['grpc-status']) !== '0')
      throw new Error(
        `${where}: grpc-status ${String(trailers['grpc-status'])} (${String(trailers['grpc-message'] ?? '')}), not 0 (OK)`,
      );
    const messages = grpcMessages(body);
    if (messages.length !== 1) throw new Error(`${where}: ${messages.length} messages, not 1`);
    const wrong = mismatch(echoMethod.responseDeserialize(messages[0] as Buffer), call);
    if (wrong !== undefined) throw new Error(`${where}: OK with ${wrong}`);
  } finally {
    session.destroy();
  }
}

/** Throws, saying what it got, unless both calls end OK with the echo of what was sent. */
export async function checkGrpcEcho(port: number, call: GrpcCall): Promise<void> {
  await clientCall(port, call);
  await rawCall(port, call);
}
