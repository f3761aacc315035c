# echo-chaos: the echo service (and the operator, with another command) from the built JavaScript
# (ADR 0006): the build stage compiles both packages, the image holds production dependencies,
# the service's dist/ and the built @echo-chaos/obs, nothing else.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json LICENSE ./
COPY scripts/build.ts ./scripts/build.ts
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
