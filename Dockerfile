# Two images from one file (ADR 0048), both from the built JavaScript (ADR 0006):
# - the echo service, the default target (the last stage, `runtime`): production dependencies, the
#   service's dist/ and the built @echo-chaos/obs, nothing else;
# - the operator, `docker build --target operator`: the package @echo-chaos/operator (its bundle,
#   src/operator/dist) and its few dependencies, the OpenTelemetry packages.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json LICENSE ./
COPY scripts/build.ts ./scripts/build.ts
# The CRD, which the operator's package holds.
COPY charts/echo-chaos/crds ./charts/echo-chaos/crds
COPY src ./src
# --ignore-scripts: nothing the build needs runs an install script (the image's node is Node 24).
RUN npm ci --ignore-scripts --no-audit --no-fund
RUN node scripts/build.ts

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace @echo-chaos/obs as it ships: its built files and its published manifest.
COPY --from=build /app/src/obs/dist ./src/obs
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# The package's optional peers, which the image has all of: the OpenTelemetry SDK (OTEL_*) and
# ioredis (ECHO_STATE_URL), at the versions of the repository's lockfile (the build cuts a lockfile
# of them from it, laid out as in the root's tree), added where they are not already.
COPY --from=build /app/.image/peers ./.peers
RUN cd .peers && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && cp -Rn node_modules/. ../node_modules/ && cd .. && rm -rf .peers

# The operator's dependencies at the versions of the repository's lockfile: the build writes the
# package's package-lock.json from it.
FROM node:24-bookworm-slim AS operator-deps
WORKDIR /app
COPY --from=build /app/src/operator/dist/package.json /app/src/operator/dist/package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS operator
ENV NODE_ENV=production
# glibc malloc: one arena, and blocks of 32 KiB or more mapped on their own, so what parsing the
# bundle freed goes back to the system (ADR 0025); as `npm run operator` and the chart run it.
ENV MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=32768
WORKDIR /app
COPY --from=operator-deps /app/node_modules ./node_modules
COPY --from=build /app/src/operator/dist ./
# A numeric user, so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 10001:10001
EXPOSE 8081
# node itself, as the chart's operator Deployment runs it (command: node, args: operator.args), with
# the heap flags of `npm run operator` (ADR 0024, ADR 0025). Exec form: node is PID 1 and receives
# SIGTERM itself, so the drain runs.
ENTRYPOINT ["node"]
CMD ["--max-semi-space-size=2", "--heap-growing-percent=30", "--optimize-for-size", "main.js"]

# The echo service: the default target.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/src/obs ./src/obs
COPY package.json ./
COPY --from=build /app/dist ./dist
# A numeric user, so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 10001:10001
EXPOSE 8080
# The port the service listens on: PORT (docker run -e PORT=...), else its default 8080.
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "const tls = (process.env.ENABLE_TLS || '').toLowerCase() === 'true'; require(tls ? 'node:https' : 'node:http').get({ host: '127.0.0.1', port: process.env.PORT || 8080, path: '/health', rejectUnauthorized: false, timeout: 2500 }, (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1)).on('timeout', () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself, so the drain runs.
# A young generation of at most 2 x 16 MiB (ADR 0013): Node 24's default grows it to 128 MiB under a
# burst of delayed requests and never gives that memory back.
ENTRYPOINT ["node", "--max-semi-space-size=16", "--heap-growing-percent=30"]
CMD ["dist/echo/main.js"]
