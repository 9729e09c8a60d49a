/**
 * A management context for the k8s-kubeadm driver tests, with the engine's step journal (a step
 * that completed is not run again; the journal survives a "crash" and a retry), progress and log
 * capture, a VIM registry facade, and sealed instance state, plus crash injection around steps.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import type { LcmCommand } from '../../../src/model/lcm-command.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import type { HookName, MgmtContext, MgmtProgress, MgmtTarget, MgmtVims } from '../../../src/mgmt/mgmt-driver.ts';
import type { VimInput } from '../../../src/vims/vim-registry.ts';
import { flavour, SCRIPT } from './fixtures.ts';

export class FakeVims implements MgmtVims {
  readonly vims = new Map<string, { id: string; name: string; authUrl: string; createdFor?: string; input: VimInput }>();
  registerCalls = 0;
  deleted: string[] = [];
  private n = 0;
  constructor(private readonly instanceId: string) {}
  async register(input: VimInput): Promise<{ id: string; created: boolean }> {
    this.registerCalls++;
    const same = [...this.vims.values()].find((v) => v.name === input.name && v.authUrl === input.auth_url && v.createdFor === this.instanceId);
    if (same) return { id: same.id, created: false };
    const id = `vim-${++this.n}`;
    this.vims.set(id, { id, name: input.name as string, authUrl: input.auth_url as string, createdFor: this.instanceId, input: structuredClone(input) });
    return { id, created: true };
  }
  async findByName(name: string) {
    const v = [...this.vims.values()].find((x) => x.name === name);
    return v ? { id: v.id, authUrl: v.authUrl, ...(v.createdFor ? { createdFor: v.createdFor } : {}) } : undefined;
  }
  async delete(id: string): Promise<void> {
    this.deleted.push(id);
    this.vims.delete(id);
  }
}

/** What survives between runs of hooks (the engine's persisted parts). */
export class CtxWorld {
  /** Step journal by op: `<opId>` -> step name -> result. */
  readonly journals = new Map<string, Map<string, unknown>>();
  readonly instanceState: { value: Record<string, unknown> } = { value: {} };
  readonly progress: MgmtProgress[] = [];
  readonly logs: string[] = [];
  /** Every step actually run (not replayed from the journal), in order. */
  readonly steps: string[] = [];
  /** Driver op state per op id. */
  readonly opState = new Map<string, Record<string, unknown>>();
  /** Throw after this step completed and was recorded (a crash between two steps). */
  crashAfterStep: string | undefined;
  /** Throw after this step's work but before it is recorded (a crash inside the step). */
  crashBeforeRecord: string | undefined;
  /** The install script of the package. */
  scriptText = '#!/bin/bash\necho install\n';
  constructor(readonly vims: FakeVims) {}
  journal(opId: string): Map<string, unknown> {
    let j = this.journals.get(opId);
    if (!j) this.journals.set(opId, (j = new Map()));
    return j;
  }
}

export interface CtxSpec {
  hook: HookName;
  command: LcmCommand;
  instance: VnfInstanceRecord;
  previousInstance?: VnfInstanceRecord;
  targets?: MgmtTarget[];
  params?: Record<string, unknown>;
  instantiateParams?: Record<string, unknown>;
  opId?: string;
}

export function makeCtx(world: CtxWorld, s: CtxSpec): MgmtContext {
  const opId = s.opId ?? 'op-1';
  const journal = world.journal(opId);
  const state = world.opState.get(opId) ?? {};
  world.opState.set(opId, state);
  const stream = new Writable({
    write(chunk, _enc, cb) {
      world.logs.push(String(chunk));
      cb();
    },
  });
  const log = pino({ level: 'debug' }, stream);
  const ctx = {
    hook: s.hook,
    instance: s.instance,
    previousInstance: s.previousInstance ?? s.instance,
    targets: s.targets ?? [],
    params: s.params ?? (s.command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
    instantiateParams: s.instantiateParams ?? {},
    opOcc: { id: opId, operation: s.command.operation },
    command: s.command,
    request: {},
    vnfd: { files: [SCRIPT, 'Definitions/df.yaml'] },
    flavour: flavour(),
    vim: undefined,
    grantRequest: null,
    grant: null,
    files: async () => new Map([[SCRIPT, Buffer.from(world.scriptText)]]),
    state,
    checkpoint: async () => undefined,
    signal: new AbortController().signal,
    log,
    config: {},
    publicUrl: 'http://127.0.0.1:9890',
    progress: (p: MgmtProgress) => {
      world.progress.push(structuredClone(p));
    },
    step: async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      if (journal.has(name)) return structuredClone(journal.get(name)) as T;
      world.steps.push(name);
      const r = await fn();
      if (world.crashBeforeRecord === name) {
        world.crashBeforeRecord = undefined;
        throw new Error(`simulated crash inside step ${name}`);
      }
      journal.set(name, JSON.parse(JSON.stringify(r ?? null)));
      if (world.crashAfterStep === name) {
        world.crashAfterStep = undefined;
        throw new Error(`simulated crash after step ${name}`);
      }
      return r;
    },
    lock: async () => async () => undefined,
    vims: world.vims,
    instanceState: {
      get: async () => structuredClone(world.instanceState.value),
      save: async (v: Record<string, unknown>) => {
        world.instanceState.value = structuredClone(v);
      },
    },
  };
  return ctx as unknown as MgmtContext;
}
