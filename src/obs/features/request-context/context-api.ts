/**
 * The request context's part of `app.obs`: carrying the current context to work run later, as
 * `obs.context.enabled` allows.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ObsCore } from '../../core/obs.ts';

/** The request context feature's part of `app.obs`. */
export interface ContextApi {
  /**
   * `fn` bound to the current context (request id, budget, retry depth, priority, tenant, trace
   * context): wherever and whenever it is called later, it runs in the context it was bound in.
   * For a callback handed to a pool, a queue or an emitter registered outside the request. With
   * `obs.context.enabled=false`, `fn` itself.
   */
  bind<F extends (...args: never[]) => unknown>(fn: F): F;
  /**
   * A submitter that carries its caller's context to the work it is given: each function argument
   * of a call is bound to the context current at that call (`obs.wrap(queue.push.bind(queue))`,
   * `obs.wrap(setImmediate)`), the rest pass as they are. With `obs.context.enabled=false`,
   * `submit` itself.
   */
  wrap<F extends (...args: never[]) => unknown>(submit: F): F;
}

/** The context API of an obs core. */
export function contextApi(core: Pick<ObsCore, 'config'>): ContextApi {
  const enabled = core.config.context.enabled;
  return {
    bind(fn) {
      return enabled ? AsyncLocalStorage.bind(fn) : fn;
    },
    wrap(submit) {
      if (!enabled) return submit;
      const wrapped = function (this: unknown, ...args: unknown[]) {
        const bound = args.map((arg) =>
          typeof arg === 'function' ? AsyncLocalStorage.bind(arg as (...a: unknown[]) => unknown) : arg,
        );
        return Reflect.apply(submit, this, bound);
      };
      // It takes the same arguments and returns what `submit` returns (it only binds the functions
      // among them), so it is a `typeof submit`; TypeScript cannot see that through a rest wrapper.
      return wrapped as unknown as typeof submit;
    },
  };
}
