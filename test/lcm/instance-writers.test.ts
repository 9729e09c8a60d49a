/**
 * `vnf_instance` rows have one writer, src/lcm/instance-state.ts: no other file of src/ inserts,
 * updates or deletes them (with the query builder or in SQL text). Exceptions: the migrations
 * (the schema and its data migrations) and key rotation (src/store/rekey.ts re-encrypts
 * `vim_secrets` in place, through a generic table list, changing no value).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/fixtures.ts';

const SRC = join(REPO_ROOT, 'src');
const WRITER = 'src/lcm/instance-state.ts';
const EXEMPT = [/^src\/store\/migrations\//, /^src\/store\/rekey\.ts$/];

/** A write of `vnf_instance`: Kysely's builders, or SQL text. */
const WRITES = [/\b(updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\(\s*['"`]vnf_instance['"`]/, /\b(update|insert\s+into|delete\s+from|merge\s+into)\s+vnf_instance\b/i];

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

describe('vnf_instance writers', () => {
  const all = files(SRC).map((f) => ({ path: relative(REPO_ROOT, f).split('\\').join('/'), text: readFileSync(f, 'utf8') }));
  const writes = (text: string) => WRITES.some((re) => re.test(text));

  it('finds the writer (the check sees the code it checks)', () => {
    const w = all.find((f) => f.path === WRITER);
    assert.ok(w, `${WRITER} not found`);
    assert.ok(writes(w.text), `${WRITER} writes no vnf_instance row any more: the check is out of date`);
  });

  it('no other file of src/ writes vnf_instance rows', () => {
    const others = all.filter((f) => f.path !== WRITER && !EXEMPT.some((re) => re.test(f.path)) && writes(f.text)).map((f) => f.path);
    assert.deepEqual(others, [], 'write vnf_instance rows through src/lcm/instance-state.ts');
  });
});
