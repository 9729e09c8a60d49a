/**
 * Stack waits that learn what the observation after them needs while Heat is still working, so
 * that the VNFM's own time after Heat finishes is close to one poll:
 *
 * - {@link waitUpdateWatching} (VNFC heal): polls the nested stacks the update changes (the
 *   member stacks owning the marked resources) and, once each one has finished THIS update, reads
 *   its resources and CP ports right away; then it follows the chain of parent stacks up to the
 *   top stack (each finishes after its child) and polls the top stack at the short interval only
 *   when its last child has finished, i.e. when its own completion is imminent.
 * - {@link waitCreateListing} (entire heal): while the stack is created, lists each nested stack
 *   once the resource owning it is `CREATE_COMPLETE` (nothing in it changes after that), so that
 *   when the top stack completes only its own rows are left to read; the result is the listing a
 *   `nested_depth` request would give (same rows, same order, `parent_resource` set).
 *
 * Both fail exactly like {@link HeatClient.waitForStatus} (a `*_FAILED` stack, a timeout, an
 * abort); what they read on the way is best effort: a read that fails only means the caller lists
 * as usual.
 */
import { setTimeout as sleepTimer } from 'node:timers/promises';
import { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
import { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';

/** Poll intervals of a wait (see the driver's `poll`). */
export interface WatchPoll {
  pollInitialMs: number;
  pollMaxMs: number;
  pollBackoffAfterMs: number;
  pollSlowMaxMs: number;
}

export interface WatchOptions extends WatchPoll {
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  onPoll?: ((stack: HeatStack) => void) | undefined;
}

/** Runs at most `n` of the given tasks at a time. */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const queue: (() => void)[] = [];
  return <T>(task: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const start = () => {
        running++;
        task()
          .then(resolve, reject)
          .finally(() => {
            running--;
            queue.shift()?.();
          });
      };
      if (running < n) start();
      else queue.push(start);
    });
}

const sig = (signal: AbortSignal | undefined): { signal?: AbortSignal } => (signal === undefined ? {} : { signal });
/** Stack reads of a wait: status only, outputs not resolved. */
const statusRead = (signal: AbortSignal | undefined) => ({ ...sig(signal), resolveOutputs: false });

/** Throws like `waitForStatus` when the top stack ended in a state that is not `target`. */
function checkTop(ref: HeatStackRef, st: HeatStack, target: string): boolean {
  const status = st.stack_status;
  if (status === target) return true;
  if (status.endsWith('_FAILED') || status === 'ROLLBACK_COMPLETE' || (status === 'DELETE_COMPLETE' && target !== 'DELETE_COMPLETE')) {
    throw new OpenStackError({
      service: 'heat',
      kind: OpenStackErrorKind.stackFailed,
      detail: `heat stack ${ref.name} (${ref.id}) is ${status} while waiting for ${target}: ${st.stack_status_reason || 'no reason given'}`,
      retryable: false,
      stackStatus: status,
      stackStatusReason: st.stack_status_reason,
    });
  }
  return false;
}

function timeoutError(ref: HeatStackRef, target: string, timeoutMs: number, last: HeatStack | undefined): OpenStackError {
  return new OpenStackError({
    service: 'heat',
    kind: OpenStackErrorKind.waitTimeout,
    detail: `heat stack ${ref.name} (${ref.id}) did not reach ${target} within ${timeoutMs} ms (last ${last?.stack_status ?? 'unknown'}: ${last?.stack_status_reason || 'no reason given'})`,
    retryable: false,
    ...(last === undefined ? {} : { stackStatus: last.stack_status, stackStatusReason: last.stack_status_reason }),
  });
}

async function pause(ms: number, ref: HeatStackRef, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleepTimer(ms, undefined, signal === undefined ? undefined : { signal });
  } catch (err) {
    throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.aborted, detail: `wait for stack ${ref.name} cancelled`, retryable: false, cause: err });
  }
}

/** A nested stack followed during an update. */
interface Watched {
  ref: HeatStackRef;
  /** `updated_time` at the first read (undefined before it). */
  base?: string | null;
  /** Seen `UPDATE_IN_PROGRESS`. */
  running: boolean;
  done: boolean;
}

/**
 * Waits for the top stack's `UPDATE_COMPLETE` while following `levels` of nested stacks:
 * `levels[0]` are the stacks the update changes, `levels[i + 1]` the parents of `levels[i]`
 * (the top stack excluded). A stack of `levels[0]` has finished this update when it is
 * `UPDATE_COMPLETE` after having been seen `UPDATE_IN_PROGRESS` or with an `updated_time` other
 * than at the first read (so an earlier update's `UPDATE_COMPLETE` never counts); a parent has
 * finished when it is `UPDATE_COMPLETE` once its children have (it started this update before
 * them). `onChanged` is called for each stack of `levels[0]` once it has finished. While
 * `levels[0]` is followed the top stack is read every second poll, while the parents are, at every
 * poll; after the last level (when `chainComplete`: the top stack is the parent of it) every
 * `pollInitialMs`. Stacks are read without resolving their outputs. A followed stack that
 * fails, disappears, or a chain that cannot be followed falls back to the plain poll of the top
 * stack (its result is then only the top stack).
 */
export async function waitUpdateWatching(
  heat: HeatClient,
  ref: HeatStackRef,
  levels: readonly (readonly HeatStackRef[])[],
  chainComplete: boolean,
  onChanged: (changed: HeatStackRef) => void,
  opts: WatchOptions,
): Promise<HeatStack> {
  const target = 'UPDATE_COMPLETE';
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  let level = 0;
  let watched: Watched[] = (levels[0] ?? []).map((r) => ({ ref: r, running: false, done: false }));
  let abandoned = watched.length === 0;
  let last: HeatStack | undefined;
  let interval = opts.pollInitialMs;
  for (let tick = 0; ; tick++) {
    const following = !abandoned && level < levels.length;
    // While the changed stacks run the top stack is read every second poll (a failure elsewhere);
    // once they have finished, at every poll (their parents end soon after).
    const readTop = !following || level > 0 || tick % 2 === 0;
    const pending = following ? watched.filter((w) => !w.done) : [];
    const [top, ...states] = await Promise.all([
      readTop ? heat.getStackByNameId(ref.name, ref.id, statusRead(opts.signal)) : Promise.resolve(undefined),
      ...pending.map((w) =>
        heat.getStackByNameId(w.ref.name, w.ref.id, statusRead(opts.signal)).catch((e: unknown) => {
          if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.aborted) throw e;
          return null;
        }),
      ),
    ]);
    if (top !== undefined) {
      last = top;
      opts.onPoll?.(top);
      if (checkTop(ref, top, target)) return top;
    }
    pending.forEach((w, i) => {
      const st = states[i];
      if (st === null || st === undefined) {
        abandoned = true;
        return;
      }
      const status = st.stack_status;
      const updated = typeof st.updated_time === 'string' ? st.updated_time : null;
      const first = w.base === undefined;
      if (first) w.base = updated;
      if (status === 'UPDATE_IN_PROGRESS') w.running = true;
      else if (status === 'UPDATE_COMPLETE' && (level > 0 || w.running || (!first && updated !== w.base))) {
        w.done = true;
        if (level === 0) onChanged(w.ref);
      } else if (status.endsWith('_FAILED') || status.startsWith('DELETE_') || status.startsWith('ROLLBACK_')) abandoned = true;
    });
    if (!abandoned && level < levels.length && watched.every((w) => w.done)) {
      level++;
      watched = (levels[level] ?? []).map((r) => ({ ref: r, running: false, done: false }));
    }
    const left = deadline - Date.now();
    if (left <= 0) throw timeoutError(ref, target, opts.timeoutMs, last);
    const slow = Date.now() - started >= opts.pollBackoffAfterMs;
    if (!abandoned && level >= levels.length && chainComplete) interval = opts.pollInitialMs; // the top stack ends next
    else if (!abandoned && level < levels.length) interval = opts.pollMaxMs;
    else interval = Math.min(Math.max(interval * 2, opts.pollInitialMs), slow ? opts.pollSlowMaxMs : opts.pollMaxMs);
    await pause(Math.min(interval, left), ref, opts.signal);
  }
}

/** A listing of a stack with its nested stacks, read while the stack was created. */
export interface CreateListing {
  /** The rows as `GET .../resources?nested_depth=<depth>` gives them. */
  rows: HeatResource[];
  /** Detailed port rows (type filter) of every stack that has ports, when asked for. */
  portRows: HeatResource[] | undefined;
}

/**
 * Waits for the top stack's `CREATE_COMPLETE` like `waitForStatus`, and lists its resources
 * meanwhile (see the file comment): every `scanEvery`-th poll the stacks still being created
 * (the top stack, and nested stacks within `depth` whose owner is `CREATE_IN_PROGRESS`) are
 * listed to find the nested stacks whose owner has completed; those are listed once each, with
 * their own nested stacks, at most `concurrency` requests at a time. When every row of the top
 * stack is complete the top stack is polled at `pollInitialMs`. `listing` resolves after the top
 * stack completed, with what a `nested_depth` listing would give, or undefined when a read failed
 * (the caller then lists as usual).
 */
export async function waitCreateListing(
  heat: HeatClient,
  ref: HeatStackRef,
  opts: WatchOptions & { depth: number; withPorts: boolean; concurrency?: number; scanEvery?: number },
): Promise<{ stack: HeatStack; listing: Promise<CreateListing | undefined> }> {
  const target = 'CREATE_COMPLETE';
  const limit = limiter(opts.concurrency ?? 4);
  const scanEvery = Math.max(1, opts.scanEvery ?? 2);
  const listed = new Map<string, Promise<HeatResource[]>>();
  const ports = new Map<string, Promise<HeatResource[]>>();
  let failed = false;
  const isPort = (r: HeatResource) => r.resource_type === 'OS::Neutron::Port';
  const list = (r: HeatStackRef, filters?: Record<string, string>, withDetail?: boolean) =>
    limit(() => heat.listResources(r, { ...sig(opts.signal), ...(filters === undefined ? {} : { filters }), ...(withDetail ? { withDetail } : {}) }));

  /** When a nested stack was last found complete (the create makes progress: keep polling short). */
  let progressAt = Date.now();
  /** Lists a stack whose owner completed, and the nested stacks below it (within `depth`). */
  const listComplete = (r: HeatStackRef, level: number): void => {
    if (listed.has(r.id)) return;
    progressAt = Date.now();
    const p = list(r);
    listed.set(r.id, p);
    // A stack at the last level (a group member: a server with its ports) has its ports read
    // alongside; the others once their rows show ports.
    if (opts.withPorts && level >= opts.depth) ports.set(r.id, list(r, { type: 'OS::Neutron::Port' }, true));
    p.then(
      (rows) => {
        if (opts.withPorts && level < opts.depth && rows.some(isPort)) ports.set(r.id, list(r, { type: 'OS::Neutron::Port' }, true));
        if (level < opts.depth) {
          for (const row of rows) {
            const nested = HeatClient.nestedStackOfResource(row);
            if (nested !== undefined) listComplete(nested, level + 1);
          }
        }
      },
      () => {
        failed = true;
      },
    );
  };

  /** Nested stacks scanned while being created (listed again, complete, at the end). */
  const open = new Map<string, { ref: HeatStackRef; level: number }>();
  /**
   * Lists a stack being created; returns whether it is nearly done: each of its rows is complete,
   * or in progress with a nested stack that is nearly done. The top stack's ports are read as
   * soon as all of its port rows are complete.
   */
  const scan = async (r: HeatStackRef, level: number): Promise<boolean> => {
    const rows = await heat.listResources(r, sig(opts.signal));
    let nearly = rows.length > 0;
    const deeper: Promise<boolean>[] = [];
    for (const row of rows) {
      const complete = row.resource_status === 'CREATE_COMPLETE';
      const nested = level < opts.depth ? HeatClient.nestedStackOfResource(row) : undefined;
      if (complete) {
        if (nested !== undefined) listComplete(nested, level + 1);
      } else if (row.resource_status === 'CREATE_IN_PROGRESS' && nested !== undefined && level + 1 < opts.depth) {
        open.set(nested.id, { ref: nested, level: level + 1 });
        deeper.push(scan(nested, level + 1).catch(() => false));
      } else nearly = false;
    }
    const nested = await Promise.all(deeper);
    if (level === 0 && opts.withPorts && !ports.has(r.id)) {
      const portRows = rows.filter(isPort);
      if (portRows.length > 0 && portRows.every((p) => p.resource_status === 'CREATE_COMPLETE')) ports.set(r.id, list(r, { type: 'OS::Neutron::Port' }, true));
    }
    return nearly && nested.every((x) => x);
  };

  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  let last: HeatStack | undefined;
  let interval = opts.pollInitialMs;
  let ending = false;
  let scanning: Promise<void> | undefined;
  for (let tick = 0; ; tick++) {
    const st = await heat.getStackByNameId(ref.name, ref.id, statusRead(opts.signal));
    last = st;
    opts.onPoll?.(st);
    if (checkTop(ref, st, target)) break;
    if (!ending && scanning === undefined && tick % scanEvery === scanEvery - 1) {
      scanning = scan(ref, 0).then(
        (all) => {
          if (all) ending = true;
          scanning = undefined;
        },
        (e: unknown) => {
          scanning = undefined;
          if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.aborted) throw e;
        },
      );
      scanning.catch(() => undefined);
    }
    const left = deadline - Date.now();
    if (left <= 0) throw timeoutError(ref, target, opts.timeoutMs, last);
    // Polls slow down only when nothing completed for `pollBackoffAfterMs` (a long create that
    // keeps completing members is polled, and scanned, at the short interval).
    const slow = Date.now() - Math.max(started, progressAt) >= opts.pollBackoffAfterMs;
    interval = ending ? opts.pollInitialMs : Math.min(Math.max(interval * 2, opts.pollInitialMs), slow ? opts.pollSlowMaxMs : opts.pollMaxMs);
    await pause(Math.min(interval, left), ref, opts.signal);
  }
  const stack = last as HeatStack;
  const listing = (async (): Promise<CreateListing | undefined> => {
    await scanning?.catch(() => undefined);
    // The top stack is complete: its rows are final now, and every nested stack it owns too
    // (those seen being created are listed again alongside).
    const topRows = heat.listResources(ref, sig(opts.signal));
    const topPorts = opts.withPorts && !ports.has(ref.id) ? heat.listResources(ref, { ...sig(opts.signal), filters: { type: 'OS::Neutron::Port' }, withDetail: true }) : undefined;
    topPorts?.catch(() => undefined);
    listed.set(ref.id, topRows);
    for (const o of open.values()) listComplete(o.ref, o.level);
    const rows0 = await topRows;
    if (topPorts !== undefined && rows0.some(isPort)) ports.set(ref.id, topPorts);
    if (opts.depth > 0) {
      for (const row of rows0) {
        const nested = HeatClient.nestedStackOfResource(row);
        if (nested !== undefined) listComplete(nested, 1);
      }
    }
    // Wait until every listing started (they start more as they resolve) has resolved.
    for (let n = -1; n !== listed.size + ports.size; ) {
      n = listed.size + ports.size;
      await Promise.all([...listed.values(), ...ports.values()]);
    }
    if (failed) return undefined;
    const out: HeatResource[] = [];
    // Heat's order: a stack's own rows, then those of each nested stack in the order of its owner.
    const compose = async (r: HeatStackRef, level: number, owner: string | undefined, into: HeatResource[]): Promise<void> => {
      const rows = (await listed.get(r.id)) ?? [];
      for (const row of rows) into.push(owner === undefined ? row : { ...row, parent_resource: owner });
      if (level >= opts.depth) return;
      for (const row of rows) {
        const nested = HeatClient.nestedStackOfResource(row);
        if (nested !== undefined) await compose(nested, level + 1, row.resource_name, into);
      }
    };
    await compose(ref, 0, undefined, out);
    const portRows = opts.withPorts ? (await Promise.all([...ports.values()])).flat() : undefined;
    return { rows: out, portRows };
  })();
  listing.catch(() => undefined);
  return { stack, listing: listing.catch((e: unknown) => {
    if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.aborted) throw e;
    return undefined;
  }) };
}
