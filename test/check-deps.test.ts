/**
 * The dependency rule check (scripts/check-deps.mjs): the real tree passes, and small fake trees
 * with one violation each fail naming the offending `file -> import`, the files of an import
 * cycle, or the file and line naming a VIM type outside its folder.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT } from './helpers/fixtures.ts';

const SCRIPT = join(REPO_ROOT, 'scripts', 'check-deps.mjs');

function run(dir?: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...(dir ? [dir] : [])], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const made: string[] = [];
/** A fake project: `files` maps paths under src/ to their text. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'vnfm-check-deps-'));
  made.push(dir);
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, 'src', p)), { recursive: true });
    writeFileSync(join(dir, 'src', p), text);
  }
  return dir;
}

/** A layered tree that respects the rule; cases add one file to it. */
const GOOD: Record<string, string> = {
  'errors.ts': 'export const E = 1;\n',
  'store/db.ts': "import { E } from '../errors.ts';\nexport const db = E;\n",
  'core/base.ts': "import type { db } from '../store/db.ts';\nexport type Base = { db: typeof db };\n",
  'core/services.ts': "import type { Base } from './base.ts';\nimport type { Engine } from '../lcm/engine.ts';\nexport type Services = Base & { engine: Engine };\n",
  'lcm/engine.ts': "import type { Base } from '../core/base.ts';\nimport { db } from '../store/db.ts';\nimport { KIND } from '../infra/stub/vim-type.ts';\nexport class Engine { s?: Base; d = db; k = KIND; }\n",
  'infra/stub/vim-type.ts': "/** The 'stub' VIM type. */\nexport const STUB_VIM_TYPE = 'ETSINFV.STUB.V_1';\nexport const KIND = 'stub';\n",
  'infra/stub/vim-plugin.ts': "import { STUB_VIM_TYPE } from './vim-type.ts';\nexport const plugin = { vimType: STUB_VIM_TYPE, aliases: ['stub'] };\n",
  'api/app.ts': "import { Engine } from '../lcm/engine.ts';\nexport const app = new Engine();\n",
  'main/server.ts': "import { app } from '../api/app.ts';\nexport const start = async () => (await import('../sim/cloud.ts')).sim(app, 'stub');\n",
  'sim/cloud.ts': "export const sim = (x: unknown, type: string) => (type === 'ETSINFV.STUB.V_1' ? x : undefined);\n",
  'cli/main.ts': "import { start } from '../main/server.ts';\nawait start();\n",
};

describe('check-deps', () => {
  after(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });

  it('passes on the real tree with a one-line summary', () => {
    const r = run();
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /^check-deps: \d+ files, \d+ relative imports, \d+ layers: dependency rule holds, no folder cycles, no import cycles, VIM types named only in their folders\n$/);
  });

  it('lets the lab import the simulators and the root load the lab dynamically', () => {
    const r = run(tree({ ...GOOD, 'lab/index.ts': "import { sim } from '../sim/cloud.ts';\nimport { E } from '../errors.ts';\nexport const lab = [sim, E];\n", 'main/lab.ts': "export const start = async () => (await import('../lab/index.ts')).lab;\n" }));
    assert.equal(r.status, 0, r.out);
  });

  it('passes on a fake tree that respects the rule', () => {
    const r = run(tree(GOOD));
    assert.equal(r.status, 0, r.out);
  });

  const cases: [string, Record<string, string>, RegExp][] = [
    ['a domain module importing api/ (types count too)', { 'lcm/runner.ts': "import type { app } from '../api/app.ts';\nexport type A = typeof app;\n" }, /src\/lcm\/runner\.ts -> \.\.\/api\/app\.ts {2}\(only the composition root and the CLI import api\/\)/],
    ['a module importing the composition root', { 'lcm/plugin.ts': "import { start } from '../main/server.ts';\nexport const s = start;\n" }, /src\/lcm\/plugin\.ts -> \.\.\/main\/server\.ts/],
    ['the root importing a simulator statically', { 'main/sim-cloud.ts': "import { sim } from '../sim/cloud.ts';\nexport const s = sim;\n" }, /src\/main\/sim-cloud\.ts -> \.\.\/sim\/cloud\.ts {2}\(the composition root loads src\/sim\/ only with a dynamic import\(\)\)/],
    ['another module importing a simulator', { 'lcm/fake.ts': "export const f = () => import('../sim/cloud.ts');\n" }, /src\/lcm\/fake\.ts -> \.\.\/sim\/cloud\.ts/],
    ['the root importing the lab statically', { 'lab/index.ts': "import { sim } from '../sim/cloud.ts';\nexport const lab = sim;\n", 'main/lab.ts': "import { lab } from '../lab/index.ts';\nexport const l = lab;\n" }, /src\/main\/lab\.ts -> \.\.\/lab\/index\.ts {2}\(the composition root loads src\/lab\/ only with a dynamic import\(\)\)/],
    ['another module importing the lab', { 'lab/index.ts': 'export const lab = 1;\n', 'mgmt/ssh.ts': "export const f = () => import('../lab/index.ts');\n" }, /src\/mgmt\/ssh\.ts -> \.\.\/lab\/index\.ts {2}\(only the composition root imports src\/lab\/\)/],
    ['the lab importing a domain module', { 'lab/index.ts': "import { Engine } from '../lcm/engine.ts';\nexport const e = Engine;\n" }, /src\/lab\/index\.ts -> \.\.\/lcm\/engine\.ts {2}\(src\/lab\/ imports only src\/sim\/ and leaf modules\)/],
    ['store importing upward', { 'store/up.ts': "import { Engine } from '../lcm/engine.ts';\nexport const e = Engine;\n" }, /src\/store\/up\.ts -> \.\.\/lcm\/engine\.ts/],
    ['core importing a value from a layer', { 'core/metrics.ts': "import { Engine } from '../lcm/engine.ts';\nexport const e = Engine;\n" }, /src\/core\/metrics\.ts -> \.\.\/lcm\/engine\.ts/],
    ['a second import on one line', { 'notify/two.ts': "import { E } from '../errors.ts'; import { app } from '../api/app.ts';\nexport const x = [E, app];\n" }, /src\/notify\/two\.ts -> \.\.\/api\/app\.ts/],
    ['lcm importing autoheal', { 'autoheal/plugin.ts': 'export const h = 1;\n', 'lcm/heal.ts': "import {\n  h,\n} from '../autoheal/plugin.ts';\nexport const x = h;\n" }, /src\/lcm\/heal\.ts -> \.\.\/autoheal\/plugin\.ts/],
  ];
  for (const [name, extra, expected] of cases) {
    it(`fails on ${name}, naming the import`, () => {
      const r = run(tree({ ...GOOD, ...extra }));
      assert.equal(r.status, 1, r.out);
      assert.match(r.out, expected);
    });
  }

  it('reports an import cycle between files, type-only imports included, naming its files', () => {
    const r = run(tree({ ...GOOD, 'lcm/engine.ts': "import type { Services } from '../core/services.ts';\nexport class Engine { s?: Services; }\n" }));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /import cycle: src\/core\/services\.ts -> src\/lcm\/engine\.ts -> src\/core\/services\.ts\n/);
  });

  it('reports a cycle inside one folder and a file importing itself', () => {
    const r = run(tree({ ...GOOD, 'model/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n", 'model/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n", 'model/self.ts': "import type { S } from './self.ts';\nexport type S = { s?: S };\n" }));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /import cycle: src\/model\/a\.ts -> src\/model\/b\.ts -> src\/model\/a\.ts/);
    assert.match(r.out, /import cycle: src\/model\/self\.ts -> src\/model\/self\.ts/);
  });

  it('reports a VIM type named outside its VIM folder and the composition root, with file and line', () => {
    const r = run(tree({ ...GOOD, 'mgmt/driver.ts': "export const a = 1;\nexport const conn = { vimType: 'ETSINFV.STUB.V_1' };\n", 'vims/registry.ts': 'export const kinds = [`stub`];\n' }));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /src\/mgmt\/driver\.ts:2 names VIM type 'ETSINFV\.STUB\.V_1' {2}\(only src\/infra\/stub\/ and the composition root name it/);
    assert.match(r.out, /src\/vims\/registry\.ts:1 names VIM type `stub`/);
  });

  it('lets another VIM folder name only its own types', () => {
    const r = run(tree({ ...GOOD, 'infra/other/vim-type.ts': "export const OTHER = 'other';\n", 'infra/other/driver.ts': "export const types = ['other', 'stub'];\n" }));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /src\/infra\/other\/driver\.ts:1 names VIM type 'stub'/);
    assert.doesNotMatch(r.out, /names VIM type 'other'/);
  });

  it('reports a cycle between folders', () => {
    const r = run(tree({ ...GOOD, 'infra/a.ts': "import { b } from '../nfvo/b.ts';\nexport const a = b;\n", 'nfvo/b.ts': "import { a } from '../infra/a.ts';\nexport const b = () => a;\n" }));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /folder cycle: infra -> nfvo -> infra/);
  });
});
