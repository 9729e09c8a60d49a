/** The operations the runner executes, by SOL operation name. */
import { vnfmError } from '../../errors.ts';
import type { Operation } from '../../model/op-occ.ts';
import type { OperationHandler } from './handler.ts';
import { heal } from './heal.ts';
import { instantiate } from './instantiate.ts';
import { scale } from './scale.ts';
import { terminate } from './terminate.ts';

const HANDLERS = { INSTANTIATE: instantiate, SCALE: scale, HEAL: heal, TERMINATE: terminate } as const;

/** Operations executed by the runner (MODIFY_INFO completes synchronously: ./modify-info.ts). */
export type RunnableOperation = keyof typeof HANDLERS;

/** The handler of an operation the runner executes. */
export function handlerFor(operation: Operation): OperationHandler {
  const h = (HANDLERS as unknown as Record<string, OperationHandler | undefined>)[operation];
  if (!h) throw vnfmError('VNFM_ERR_OPOCC_UNSUPPORTED', `operation ${operation} is not executed by the runner`);
  return h;
}

/** Runnable operations (metrics, docs). */
export const RUNNABLE_OPERATIONS = Object.keys(HANDLERS) as RunnableOperation[];
