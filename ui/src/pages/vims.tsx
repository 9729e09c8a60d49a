/** VIMs: the registered VIMs (secrets never shown: the API masks them) and a registration form (secrets write-only). */
import { useEffect, useState } from 'preact/hooks';
import { api, type Problem } from '../api.ts';
import { Badge, ColumnHeads, ConfirmDialog, problemOf, ProblemView, shortId } from '../components.tsx';

export interface Vim {
  id: string;
  name: string;
  type: string;
  description?: string;
  auth_url: string;
  is_default: boolean;
  status: string;
  tenant_id?: string;
}

export async function vimsOf(): Promise<Vim[]> {
  return (await api<{ vims: Vim[] }>('/v1.0/vims')).data.vims ?? [];
}

const MASK = '•••';

export function VimsPage() {
  const [vims, setVims] = useState<Vim[] | null>(null);
  const [err, setErr] = useState<Problem | null>(null);
  const [type, setType] = useState<'openstack' | 'kubernetes'>('openstack');
  const [pending, setPending] = useState<{ body: Record<string, unknown>; shown: Record<string, unknown> } | null>(null);
  const [note, setNote] = useState('');
  const load = async () => {
    try {
      setVims(await vimsOf());
      setErr(null);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    void load();
  }, []);
  const submit = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const v = (k: string) => String(f.get(k) ?? '').trim();
    const vim: Record<string, unknown> = { name: v('name'), type, auth_url: v('auth_url'), is_default: f.get('is_default') === 'on' };
    if (v('description')) vim.description = v('description');
    let shownCred: Record<string, unknown>;
    if (type === 'openstack') {
      vim.auth_cred = { username: v('username'), password: v('password'), user_domain_name: v('user_domain') || 'Default' };
      vim.vim_project = { name: v('project'), project_domain_name: v('project_domain') || 'Default' };
      shownCred = { ...(vim.auth_cred as object), password: MASK };
    } else {
      vim.auth_cred = { bearer_token: v('bearer_token'), ...(v('ssl_ca_cert') ? { ssl_ca_cert: v('ssl_ca_cert') } : {}) };
      vim.vim_project = { name: v('project') || 'default' };
      shownCred = { bearer_token: MASK, ...(v('ssl_ca_cert') ? { ssl_ca_cert: '(certificate)' } : {}) };
    }
    // the dialog shows the request with the secrets masked; the form forgets them once sent
    setPending({ body: { vim }, shown: { vim: { ...vim, auth_cred: shownCred } } });
  };
  return (
    <section aria-labelledby="vims-h">
      <h1 id="vims-h">VIMs</h1>
      <ProblemView problem={err} />
      {vims === null ? (
        <p aria-busy="true">Loading…</p>
      ) : vims.length === 0 ? (
        <p>No VIMs registered.</p>
      ) : (
        <table data-testid="vims-table">
          <ColumnHeads names={['Name', 'Type', 'Endpoint', 'Project', 'Default', 'Status', 'Id']} />
          <tbody>
            {vims.map((v) => (
              <tr key={v.id}>
                <td>{v.name}</td>
                <td>{v.type}</td>
                <td>
                  <code>{v.auth_url}</code>
                </td>
                <td>{v.tenant_id || '—'}</td>
                <td>{v.is_default ? 'yes' : ''}</td>
                <td>
                  <Badge value={v.status} />
                </td>
                <td>
                  <code title={v.id}>{shortId(v.id)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="card" aria-labelledby="vim-reg-h" onSubmit={submit} autoComplete="off">
        <h2 id="vim-reg-h">Register a VIM</h2>
        <p class="muted">Secrets are write-only: the VNFM stores them encrypted and never shows them again.</p>
        <fieldset>
          <legend>Type</legend>
          <label>
            <input type="radio" name="type" checked={type === 'openstack'} onChange={() => setType('openstack')} /> OpenStack (Keystone v3)
          </label>
          <label>
            <input type="radio" name="type" checked={type === 'kubernetes'} onChange={() => setType('kubernetes')} /> Kubernetes
          </label>
        </fieldset>
        <label>
          Name
          <input name="name" required />
        </label>
        <label>
          Description
          <input name="description" />
        </label>
        <label>
          {type === 'openstack' ? 'Keystone URL' : 'API server URL'}
          <input name="auth_url" type="url" required />
        </label>
        {type === 'openstack' ? (
          <>
            <label>
              User name
              <input name="username" required />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="new-password" required />
            </label>
            <label>
              User domain
              <input name="user_domain" placeholder="Default" />
            </label>
            <label>
              Project
              <input name="project" required />
            </label>
            <label>
              Project domain
              <input name="project_domain" placeholder="Default" />
            </label>
          </>
        ) : (
          <>
            <label>
              Bearer token
              <input name="bearer_token" type="password" autoComplete="new-password" required />
            </label>
            <label>
              CA certificate (PEM)
              <textarea name="ssl_ca_cert" rows={3} />
            </label>
            <label>
              Namespace
              <input name="project" placeholder="default" />
            </label>
          </>
        )}
        <label class="inline">
          <input type="checkbox" name="is_default" /> default VIM of its type
        </label>
        <button type="submit" class="primary">
          Review…
        </button>
      </form>
      {note ? <p role="status">{note}</p> : null}
      {pending ? (
        <ConfirmDialog
          title="Register the VIM"
          method="POST"
          path="/v1.0/vims"
          body={pending.shown}
          confirmLabel="Register"
          onClose={() => setPending(null)}
          onConfirm={async () => {
            const r = await api<{ vim: Vim }>('/v1.0/vims', { method: 'POST', body: pending.body });
            setNote(`VIM ${r.data.vim.name} registered (${r.data.vim.id}).`);
            (document.querySelector('form[aria-labelledby="vim-reg-h"]') as HTMLFormElement | null)?.reset();
            await load();
          }}
        >
          <p class="muted">Secrets are masked here; the request carries them.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
