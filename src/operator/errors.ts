/**
 * The operator's error catalogue: one code per failure, so callers and logs match on `code`.
 */

export const OPERATOR_ERRORS = {
  OPERATOR_ERR_CONFIG: 'invalid operator configuration',
  OPERATOR_ERR_PUSH: 'pushing scenarios to an echo pod failed',
  OPERATOR_ERR_KUBECONFIG: 'no Kubernetes configuration found',
} as const;

export type OperatorErrorCode = keyof typeof OPERATOR_ERRORS;

export class OperatorError extends Error {
  readonly code: OperatorErrorCode;
  constructor(code: OperatorErrorCode, detail: string, options?: { cause?: unknown }) {
    super(`${OPERATOR_ERRORS[code]}: ${detail}`, options);
    this.name = 'OperatorError';
    this.code = code;
  }
}
