/**
 * grpc-js clients of the service's gRPC port for the tests: the echo service from the proto the
 * package ships, health and reflection from their packages' protos.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  type ChannelCredentials,
  type Client,
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  Metadata,
  type MethodDefinition,
  type ServiceClientConstructor,
  type ServiceError,
  type StatusObject,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { ECHO_PROTO_PATH } from '../../../src/echo/grpc/server.ts';

export { freePort } from '../../helpers/runtime.ts';

const LOADER = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

function constructorOf(protoPath: string | string[], path: readonly string[]): ServiceClientConstructor {
  let node: GrpcObject | ServiceClientConstructor = loadPackageDefinition(loadSync(protoPath, LOADER));
  for (const name of path) node = (node as GrpcObject)[name] as GrpcObject | ServiceClientConstructor;
  return node as ServiceClientConstructor;
}

const reflectionDir = join(
  dirname(createRequire(import.meta.url).resolve('@grpc/reflection/package.json')),
  'build',
  'proto',
);

export const EchoServiceClient = constructorOf(ECHO_PROTO_PATH, ['echochaos', 'v1', 'EchoService']);
export const HealthClient = constructorOf(healthProtoPath, ['grpc', 'health', 'v1', 'Health']);
export const ReflectionV1Client = constructorOf(join(reflectionDir, 'grpc/reflection/v1/reflection.proto'), [
  'grpc',
  'reflection',
  'v1',
  'ServerReflection',
]);
export const ReflectionV1AlphaClient = constructorOf(
  join(reflectionDir, 'grpc/reflection/v1alpha/reflection.proto'),
  ['grpc', 'reflection', 'v1alpha', 'ServerReflection'],
);

export interface EchoResponse {
  message: string;
  payload: Buffer;
  metadata: Record<string, string>;
  request_id: string;
  sequence: number;
}

/** A client of `service` on 127.0.0.1:`port`, cleartext unless `creds` are given. */
export function clientOf(
  service: ServiceClientConstructor,
  port: number,
  creds: ChannelCredentials = credentials.createInsecure(),
): Client {
  return new service(`127.0.0.1:${port}`, creds);
}

/** The method `name` of `service`: path, serializers. */
export function methodOf(service: ServiceClientConstructor, name: string): MethodDefinition<object, unknown> {
  const method = service.service[name];
  if (method === undefined) throw new Error(`no method ${name}`);
  return method;
}

/** Metadata from pairs (a key may repeat). */
export function metadataOf(pairs: ReadonlyArray<readonly [string, string | Buffer]> = []): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of pairs) metadata.add(key, value);
  return metadata;
}

/** What a unary call ended with: its answer, or its error; with the initial metadata, the trailers and how long it took. */
export interface UnaryResult<T> {
  readonly value?: T;
  readonly error?: ServiceError;
  readonly head?: Metadata;
  readonly trailers?: Metadata;
  readonly elapsedMs: number;
}

/** Calls the unary `method` of `client`, never rejecting. */
export function unary<T>(
  client: Client,
  method: MethodDefinition<object, unknown>,
  request: object,
  metadata: Metadata = new Metadata(),
  options: { deadlineMs?: number } = {},
): Promise<UnaryResult<T>> {
  const startedMs = performance.now();
  return new Promise((resolve) => {
    let head: Metadata | undefined;
    const callOptions = options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
    const call = client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
      callOptions,
      (error, value) => {
        // The status (and its trailers) comes right after the callback: resolved then.
        ended = {
          ...(error === null ? { value: value as T } : { error }),
          elapsedMs: performance.now() - startedMs,
        };
      },
    );
    let ended: { value?: T; error?: ServiceError; elapsedMs: number } | undefined;
    call.on('metadata', (m: Metadata) => {
      head = m;
    });
    call.on('status', (s: StatusObject) => {
      setImmediate(() =>
        resolve({
          ...(ended ?? { elapsedMs: performance.now() - startedMs }),
          ...(head === undefined ? {} : { head }),
          trailers: s.metadata,
        }),
      );
    });
  });
}

/** The status a stream ended with, and what it sent before. */
export interface StreamResult<T> {
  readonly messages: T[];
  readonly error?: ServiceError;
}

/** Reads a server stream (`ServerStream`) to its end, never rejecting. */
export function serverStream<T>(
  client: Client,
  method: MethodDefinition<object, unknown>,
  request: object,
  metadata: Metadata = new Metadata(),
): Promise<StreamResult<T>> {
  return new Promise((resolve) => {
    const messages: T[] = [];
    const call = client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
    );
    call.on('data', (message) => messages.push(message as T));
    call.on('error', (error: ServiceError) => resolve({ messages, error }));
    call.on('end', () => resolve({ messages }));
  });
}
