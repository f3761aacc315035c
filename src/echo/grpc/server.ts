/**
 * The gRPC server of `ECHO_GRPC_PORT` (docs/adr/0050-grpc.md): grpc-js on its own port, serving
 * `echochaos.v1.EchoService` from the proto the package ships, `grpc.health.v1.Health` and server
 * reflection (v1 and v1alpha). This module is the one that imports the gRPC packages, and it is
 * imported only when the port is set (index.ts), so without it none of them loads.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import {
  Client,
  credentials as clientCredentials,
  type GrpcObject,
  loadPackageDefinition,
  Metadata,
  Server,
  ServerCredentials,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import type { TlsMaterial } from '../transport/tls-material.ts';
import { type EchoServiceOptions, echoService } from './echo-service.ts';
import { completeCall } from './history.ts';
import { type GrpcCallMeters, meteringInterceptor, REFLECTION_METHODS } from './observe.ts';

/** Where the service's proto is, in the repository and in the package (`proto/` beside `src/`, `dist/`). */
export const ECHO_PROTO_PATH = fileURLToPath(
  new URL('../../../proto/echochaos/v1/echo.proto', import.meta.url),
);

/** The service's full name, as health checks and reflection know it. */
export const ECHO_SERVICE_NAME = 'echochaos.v1.EchoService';

/** What the gRPC server is given. */
export interface GrpcServerOptions extends EchoServiceOptions {
  readonly host: string;
  readonly port: number;
  /** The HTTP server's certificate and key (`ENABLE_TLS`), or undefined for cleartext. */
  readonly tls: TlsMaterial | undefined;
  /** The echo's meters: the faults applied, and each call once it ends (observe.ts). */
  readonly meters: EchoServiceOptions['meters'] & GrpcCallMeters;
}

/** A running gRPC server. */
export interface GrpcServer {
  /** The port it listens on. */
  readonly port: number;
  /** Health turns `NOT_SERVING` for `""` and the echo service (the drain began), for good. */
  notServing(): void;
  /**
   * Calls `Echo` of this server again (`POST /replay` of a gRPC call): the request with `metadata`,
   * at most `timeoutMs`; never rejects, the status says how it ended.
   */
  replayEcho(
    request: object,
    metadata: ReadonlyArray<readonly [string, string]>,
    timeoutMs: number,
  ): Promise<GrpcReplayed>;
  /** Health follows readiness (`PUT /control/readiness`): `SERVING` again only if not draining. */
  setReady(ready: boolean): void;
  /**
   * Stops taking calls and waits for those in flight, at most `timeoutMs`; then ends what is left.
   * Resolves true when every call finished in time. Later calls share the first one's end.
   */
  shutdown(timeoutMs: number): Promise<boolean>;
}

/** What a replayed call answered: its status, its answer (or none), its metadata and trailers. */
export interface GrpcReplayed {
  readonly code: number;
  readonly details: string;
  readonly response?: object;
  readonly metadata: Record<string, string[]>;
  readonly trailers: Record<string, string[]>;
}

/** Metadata as a plain map, binary values in base64. */
function plainMetadata(metadata: Metadata | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (metadata === undefined) return out;
  for (const key of Object.keys(metadata.getMap()))
    out[key] = metadata.get(key).map((v) => (typeof v === 'string' ? v : Buffer.from(v).toString('base64')));
  return out;
}

/** The proto-loader options: the proto's own field names (`request_id`), defaults filled in. */
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

/**
 * Every method path the server serves, the bounded set of the `method` label: the echo service's
 * and health's (from the loaded protos) and reflection's two.
 */
export function servedMethods(definition: PackageDefinition): Set<string> {
  const paths = new Set<string>(REFLECTION_METHODS);
  for (const entry of Object.values(definition))
    for (const method of Object.values(entry))
      if (typeof method === 'object' && method !== null && 'requestStream' in method && 'path' in method)
        paths.add(String(method.path));
  return paths;
}

/** Starts the server on `host:port`; a port it cannot bind rejects, naming `ECHO_GRPC_PORT`. */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  // The echo proto and health's, together: reflection lists both.
  const definition = loadSync([ECHO_PROTO_PATH, healthProtoPath], LOADER_OPTIONS);
  const echoPackage = (loadPackageDefinition(definition)['echochaos'] as GrpcObject)['v1'] as GrpcObject;
  const service = (echoPackage['EchoService'] as ServiceClientConstructor).service;

  const server = new Server({
    // One message at most MAX_BODY_SIZE, as an HTTP body: a bigger one is RESOURCE_EXHAUSTED.
    'grpc.max_receive_message_length': options.maxBodyBytes,
    // Every call, health's and reflection's too, counted once when it ends.
    interceptors: [meteringInterceptor(options.meters, servedMethods(definition), completeCall)],
  });
  options.meters.registerGrpcMeters?.();
  server.addService(service, echoService(options));
  const health = new HealthImplementation({ '': 'SERVING', [ECHO_SERVICE_NAME]: 'SERVING' });
  health.addToServer(server);
  new ReflectionService(definition).addToServer(server);

  const credentials =
    options.tls === undefined
      ? ServerCredentials.createInsecure()
      : ServerCredentials.createSsl(
          null,
          [{ private_key: Buffer.from(options.tls.key), cert_chain: Buffer.from(options.tls.cert) }],
          false,
        );
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, credentials, (err, bound) => {
      if (err === null) resolve(bound);
      else
        reject(
          new Error(
            `ECHO_GRPC_PORT=${options.port}: cannot listen on ${host}:${options.port}: ${err.message}`,
          ),
        );
    });
  });

  const echoMethod = service['Echo'];
  assert.ok(echoMethod !== undefined, 'the echo proto has an Echo method');
  // One client of this server for replays, opened at the first and closed with the server.
  let replayClient: Client | undefined;
  const replayEcho = (
    request: object,
    metadata: ReadonlyArray<readonly [string, string]>,
    timeoutMs: number,
  ): Promise<GrpcReplayed> => {
    replayClient ??= new Client(
      `${host === '[::]' || host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
      options.tls === undefined
        ? clientCredentials.createInsecure()
        : // The service's own certificate: the replay trusts it, whoever issued it.
          clientCredentials.createSsl(Buffer.from(options.tls.cert), null, null, {
            checkServerIdentity: () => undefined,
          }),
    );
    const sent = new Metadata();
    for (const [key, value] of metadata)
      sent.add(key, key.endsWith('-bin') ? Buffer.from(value, 'base64') : value);
    return new Promise((resolve) => {
      let head: Metadata | undefined;
      let answer: { response?: object; code?: number; details?: string } = {};
      const call = replayClient!.makeUnaryRequest(
        echoMethod.path,
        echoMethod.requestSerialize,
        echoMethod.responseDeserialize,
        request,
        sent,
        { deadline: Date.now() + timeoutMs },
        (err, value) => {
          answer = err === null ? { response: value as object } : { code: err.code, details: err.details };
        },
      );
      call.on('metadata', (m: Metadata) => {
        head = m;
      });
      call.on('status', (status) => {
        setImmediate(() =>
          resolve({
            code: status.code,
            details: status.details,
            ...(answer.response === undefined ? {} : { response: answer.response }),
            metadata: plainMetadata(head),
            trailers: plainMetadata(status.metadata),
          }),
        );
      });
    });
  };

  let stopping: Promise<boolean> | undefined;
  let draining = false;
  const setStatus = (serving: boolean) => {
    for (const name of ['', ECHO_SERVICE_NAME]) health.setStatus(name, serving ? 'SERVING' : 'NOT_SERVING');
  };
  return {
    port,
    replayEcho,
    notServing() {
      draining = true;
      setStatus(false);
    },
    setReady(ready) {
      if (!draining) setStatus(ready);
    },
    shutdown(timeoutMs) {
      stopping ??= new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve(false);
        }, timeoutMs);
        replayClient?.close();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      return stopping;
    },
  };
}
