# echo-chaos: the echo service (and the operator, with another command) on Node 24, which runs the
# TypeScript sources directly (type stripping), so there is no build step: production
# dependencies, package.json and src/ are the whole image.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no production dependency needs an install script, and none should run.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
# A numeric user, so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself, so the drain runs.
ENTRYPOINT ["node"]
CMD ["src/echo/main.ts"]
