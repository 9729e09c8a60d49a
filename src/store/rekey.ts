/**
 * Re-seals every sealed value of the database with the key ring's current key (`vnfm key rotate`):
 * VIM credentials (`vim.secret`), the instances' VIM secrets (`vnf_instance.vim_secrets`),
 * subscription credentials (`subscription.auth_secret`), management driver state
 * (`mgmt_state.sealed`) and the secrets inside op occ parameter trees (`vnfm-sealed:` values in
 * `op_occ.operation_params`, `command`, `ctx`, `grant_request`, `grant`).
 *
 * Safe while VNFM processes run on the same PostgreSQL database: every sealed value names its key,
 * so a value re-sealed here opens in any process that knows the new key (a process with a key file
 * re-reads it when it meets an unknown key id), and each row is written with a compare-and-set on
 * the value read (a row another process changed meanwhile is read again in the next pass).
 */
import { type Kysely, sql } from 'kysely';
import { SEALED_PREFIX } from '../model/sealed-params.ts';
import type { Database } from './schema.ts';
import type { SecretBox } from './secret-box.ts';

/** What one re-seal run did, per table/column. */
export interface RekeyReport {
  /** `table.column` -> values re-sealed. */
  resealed: Record<string, number>;
  /** Values that were already sealed with the current key. */
  current: number;
  /** Rows skipped because another process changed them during every pass (re-run to finish). */
  contended: number;
}

const TEXT_COLUMNS = [
  ['vim', 'secret', 'id'],
  ['vnf_instance', 'vim_secrets', 'id'],
  ['subscription', 'auth_secret', 'id'],
] as const;
const OP_OCC_TREES = ['operation_params', 'command', 'ctx', 'grant_request', 'grant'] as const;

/** Re-seals a parameter tree's sealed values; returns the new tree and how many changed. */
function resealTree(tree: unknown, box: SecretBox): { tree: unknown; changed: number; current: number } {
  let changed = 0;
  let current = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && v.startsWith(SEALED_PREFIX)) {
      const sealed = v.slice(SEALED_PREFIX.length);
      if (box.isCurrent(sealed)) {
        current++;
        return v;
      }
      changed++;
      return `${SEALED_PREFIX}${box.seal(box.open(sealed))}`;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return { tree: walk(tree), changed, current };
}

/** Re-seals everything not sealed with `box`'s current key (bounded passes over contended rows). */
export async function resealAll(db: Kysely<Database>, box: SecretBox, o: { passes?: number } = {}): Promise<RekeyReport> {
  const report: RekeyReport = { resealed: {}, current: 0, contended: 0 };
  const count = (k: string, n: number) => {
    if (n > 0) report.resealed[k] = (report.resealed[k] ?? 0) + n;
  };
  const passes = o.passes ?? 5;
  const untyped = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  for (const [table, column, key] of TEXT_COLUMNS) {
    let pending = true;
    for (let pass = 0; pass < passes && pending; pass++) {
      pending = false;
      const rows = (await untyped.selectFrom(table).select([key, column]).where(column, 'is not', null).execute()) as Record<string, unknown>[];
      for (const r of rows) {
        const old = r[column] as string;
        if (box.isCurrent(old)) {
          if (pass === 0) report.current++;
          continue;
        }
        const res = await untyped
          .updateTable(table)
          .set({ [column]: box.seal(box.open(old)) })
          .where(key, '=', r[key] as string)
          .where(column, '=', old)
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) count(`${table}.${column}`, 1);
        else pending = true;
      }
    }
    if (pending) report.contended++;
  }
  {
    let pending = true;
    for (let pass = 0; pass < passes && pending; pass++) {
      pending = false;
      const rows = await db.selectFrom('mgmt_state').select(['instance_id', 'driver', 'sealed']).execute();
      for (const r of rows) {
        if (box.isCurrent(r.sealed)) {
          if (pass === 0) report.current++;
          continue;
        }
        const res = await db.updateTable('mgmt_state').set({ sealed: box.seal(box.open(r.sealed)) }).where('instance_id', '=', r.instance_id).where('driver', '=', r.driver).where('sealed', '=', r.sealed).executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) count('mgmt_state.sealed', 1);
        else pending = true;
      }
    }
    if (pending) report.contended++;
  }
  // Op occ trees: only rows holding a sealed value (text search on the jsonb), compare-and-set on every tree column.
  {
    let pending = true;
    for (let pass = 0; pass < passes && pending; pass++) {
      pending = false;
      const rows = (await untyped
        .selectFrom('op_occ')
        .select(['id', ...OP_OCC_TREES])
        .where(sql<boolean>`(${sql.join(OP_OCC_TREES.map((c) => sql`coalesce(${sql.ref(c)}::text, '')`), sql` || `)}) like ${`%${SEALED_PREFIX}%`}`)
        .execute()) as Record<string, unknown>[];
      for (const r of rows) {
        const set: Record<string, string> = {};
        const changes: [string, number][] = [];
        for (const c of OP_OCC_TREES) {
          if (r[c] === null || r[c] === undefined) continue;
          const t = resealTree(r[c], box);
          if (pass === 0) report.current += t.current;
          if (t.changed > 0) {
            set[c] = JSON.stringify(t.tree);
            changes.push([c, t.changed]);
          }
        }
        if (changes.length === 0) continue;
        let q = untyped.updateTable('op_occ').set(set).where('id', '=', r.id as string);
        for (const [c] of changes) q = q.where(sql<boolean>`${sql.ref(c)}::text = (${JSON.stringify(r[c])}::jsonb)::text`);
        const res = await q.executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) for (const [c, n] of changes) count(`op_occ.${c}`, n);
        else pending = true;
      }
    }
    if (pending) report.contended++;
  }
  return report;
}
