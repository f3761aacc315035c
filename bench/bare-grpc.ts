/**
 * The baseline of the benchmark's gRPC scenario (bench/run.ts `grpc`, issue #36): a bare grpc-js
 * server serving only `echochaos.v1.EchoService/Echo` from the service's own proto
 * (proto/echochaos/v1/echo.proto, loaded with proto-loader and the options src/echo/grpc/server.ts
 * uses), doing the work echo-chaos does for the bench's calls and nothing else (no fault reading,
 * meters, health, reflection or logging):
 * - the answer: the request's message and payload, the request metadata as a map (the values of one
 *   key joined with ", ", binary ones in base64), a request id (the call's `x-request-id` when it is
 *   1-128 visible ASCII characters, else a new UUID) and sequence 0;
 * - the request id in the answer's initial metadata as `x-request-id`.
 *
 * Listens on `PORT` (127.0.0.1), prints `listening <port>` once it does; the other three methods of
 * the service are left unimplemented (grpc-js answers them `UNIMPLEMENTED`).
 */
import { randomUUID } from 'node:crypto';
import {
  type GrpcObject,
  type handleUnaryCall,
  loadPackageDefinition,
  Metadata,
  Server,
  ServerCredentials,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const PROTO = new URL('../proto/echochaos/v1/echo.proto', import.meta.url).pathname;
/** As src/echo/grpc/server.ts loads it: the proto's own field names, defaults filled in. */
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

interface EchoRequest {
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

function requestIdOf(metadata: Metadata): string {
  const given = metadata.get('x-request-id');
  const value = given.length === 1 ? given[0] : undefined;
  return typeof value === 'string' && value.length <= 128 && /^[\x21-\x7e]+$/.test(value)
    ? value
    : randomUUID();
}

function echoedMetadata(metadata: Metadata): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(metadata.getMap()))
    out[key] = metadata
      .get(key)
      .map((value) => (typeof value === 'string' ? value : value.toString('base64')))
      .join(', ');
  return out;
}

const echo: handleUnaryCall<EchoRequest, EchoResponse> = (call, callback) => {
  const requestId = requestIdOf(call.metadata);
  const head = new Metadata();
  head.set('x-request-id', requestId);
  call.sendMetadata(head);
  callback(null, {
    message: call.request.message,
    payload: call.request.payload,
    metadata: echoedMetadata(call.metadata),
    request_id: requestId,
    sequence: 0,
  });
};

const definition = loadSync(PROTO, LOADER_OPTIONS);
const v1 = (loadPackageDefinition(definition)['echochaos'] as GrpcObject)['v1'] as GrpcObject;
const server = new Server();
server.addService((v1['EchoService'] as ServiceClientConstructor).service, { Echo: echo });

const port = Number(process.env['PORT'] ?? 0);
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err !== null) {
    process.stderr.write(`cannot listen on 127.0.0.1:${port}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`listening ${bound}\n`);
});
const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
