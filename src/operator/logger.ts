/** The subset of a pino logger the operator writes to (its parts take what they use of it). */
export interface OperatorLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
