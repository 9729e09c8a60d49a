import { after, before, it } from 'node:test';
import { createInstance, getInstance, instantiate, startCnfEnv, type CnfEnv } from '/work/main/test/e2e/cnf-fixture.ts';
let env: CnfEnv;
it('x', async () => {
  env = await startCnfEnv();
  const id = await createInstance(env, 'v2', 'x');
  await instantiate(env, id, 'dbg', 'v2');
  const i = await getInstance(env, id);
  console.log(JSON.stringify(i.vimConnectionInfo));
  const rows = await env.vnfm.store.db.selectFrom('vnf_instance').select(['vim_connection_info']).execute();
  console.log(JSON.stringify(rows));
  const inst = await env.vnfm.ctx.instances.get(id);
  console.log(JSON.stringify(inst.vimConnectionInfo));
  await env.close();
});
