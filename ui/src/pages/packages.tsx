/** Packages: list, upload a CSAR (onboarding progress, errors at file:line), create + instantiate an instance of an onboarded package. */
import { useEffect, useState } from 'preact/hooks';
import { api, listAll, type Problem } from '../api.ts';
import { Badge, ColumnHeads, ConfirmDialog, navigate, problemOf, ProblemView, shortId } from '../components.tsx';
import { type Vim, vimsOf } from './vims.tsx';

interface Pkg {
  id: string;
  vnfdId?: string;
  vnfProvider?: string;
  vnfProductName?: string;
  vnfSoftwareVersion?: string;
  onboardingState: string;
  operationalState: string;
  usageState: string;
  onboardingFailureDetails?: Problem;
}

/** `path:line` (or `path:line:col`) mentions in an onboarding error, for a list the operator can read. */
export function locationsOf(detail: string): string[] {
  return [...new Set([...detail.matchAll(/([\w./-]+\.(?:ya?ml|json|mf|meta|hot|sh|py|txt)):(\d+)(?::(\d+))?/gi)].map((m) => m[0]))];
}

function OnboardingError(props: { problem: Problem }) {
  const locs = locationsOf(props.problem.detail);
  return (
    <div class="problem" role="alert" data-testid="onboarding-error">
      <p>
        <strong>Onboarding failed</strong>
      </p>
      {locs.length ? (
        <ul>
          {locs.map((l) => (
            <li key={l}>
              <code>{l}</code>
            </li>
          ))}
        </ul>
      ) : null}
      <pre class="detail" tabIndex={0}>{props.problem.detail}</pre>
    </div>
  );
}

const DEFAULT_PARAMS = '{}';

export function PackagesPage() {
  const [pkgs, setPkgs] = useState<Pkg[] | null>(null);
  const [err, setErr] = useState<Problem | null>(null);
  const [upload, setUpload] = useState<{ step: string; pkg?: Pkg; problem?: Problem } | null>(null);
  const [vims, setVims] = useState<Vim[]>([]);
  const [inst, setInst] = useState<{ pkg: Pkg; name: string; flavourId: string; vimId: string; params: string; parseError?: string } | null>(null);
  const [confirm, setConfirm] = useState<{ body: Record<string, unknown>; create: Record<string, unknown> } | null>(null);

  const load = async () => {
    try {
      setPkgs(await listAll<Pkg>('/vnfpkgm/v1/vnf_packages', { fields: 'onboardingFailureDetails' }));
      setErr(null);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    void load();
    vimsOf()
      .then(setVims)
      .catch(() => setVims([]));
  }, []);

  const onUpload = async (e: Event) => {
    e.preventDefault();
    const input = (e.target as HTMLFormElement).elements.namedItem('csar') as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    try {
      setUpload({ step: 'creating the package resource' });
      const created = await api<Pkg>('/vnfpkgm/v1/vnf_packages', { method: 'POST', body: {} });
      const id = created.data.id;
      setUpload({ step: `uploading ${file.name} (${Math.round(file.size / 1024)} KiB)`, pkg: created.data });
      await api(`/vnfpkgm/v1/vnf_packages/${id}/package_content`, { method: 'PUT', raw: file, contentType: 'application/zip' });
      for (;;) {
        const p = (await api<Pkg>(`/vnfpkgm/v1/vnf_packages/${id}`)).data;
        setUpload({ step: `onboarding: ${p.onboardingState}`, pkg: p });
        if (p.onboardingState === 'ONBOARDED' || p.onboardingState === 'ERROR') {
          setUpload({ step: p.onboardingState === 'ONBOARDED' ? 'onboarded' : 'failed', pkg: p, ...(p.onboardingFailureDetails ? { problem: p.onboardingFailureDetails } : {}) });
          break;
        }
        await new Promise((r) => setTimeout(r, 300));
      }
      input.value = '';
      await load();
    } catch (e2) {
      setUpload((u) => ({ step: 'failed', ...(u?.pkg ? { pkg: u.pkg } : {}), problem: problemOf(e2) }));
      await load();
    }
  };

  const vimFor = (pkg: Pkg) => vims.find((v) => v.is_default) ?? vims[0];

  return (
    <section aria-labelledby="pkg-h">
      <h1 id="pkg-h">VNF packages</h1>
      <form class="toolbar" onSubmit={onUpload} aria-labelledby="upload-h">
        <h2 id="upload-h">Upload a CSAR</h2>
        <label>
          CSAR file (zip)
          <input type="file" name="csar" accept=".zip,.csar,application/zip" required />
        </label>
        <button type="submit" class="primary">
          Upload and onboard
        </button>
      </form>
      {upload ? (
        <div class="card" data-testid="upload-status" data-step={upload.step}>
          <p role="status">
            Package {upload.pkg ? <code>{shortId(upload.pkg.id)}</code> : null}: {upload.step}
            {upload.pkg?.vnfdId ? ` (VNFD ${upload.pkg.vnfdId})` : ''}
          </p>
          {upload.problem ? upload.pkg?.onboardingState === 'ERROR' ? <OnboardingError problem={upload.problem} /> : <ProblemView problem={upload.problem} /> : null}
        </div>
      ) : null}
      <ProblemView problem={err} />
      {pkgs === null ? (
        <p aria-busy="true">Loading…</p>
      ) : pkgs.length === 0 ? (
        <p>No packages yet.</p>
      ) : (
        <table data-testid="packages-table">
          <ColumnHeads names={['Product', 'VNFD id', 'Onboarding', 'Operational', 'Usage', 'Id', 'Actions']} />
          <tbody>
            {pkgs.map((p) => (
              <tr key={p.id} data-pkg={p.id}>
                <td>{p.vnfProductName ? `${p.vnfProvider} ${p.vnfProductName} ${p.vnfSoftwareVersion}` : '—'}</td>
                <td>
                  <code>{p.vnfdId ?? '—'}</code>
                </td>
                <td>
                  <Badge value={p.onboardingState} />
                  {p.onboardingFailureDetails ? <OnboardingError problem={p.onboardingFailureDetails} /> : null}
                </td>
                <td>
                  <Badge value={p.operationalState} />
                </td>
                <td>{p.usageState}</td>
                <td>
                  <code title={p.id}>{shortId(p.id)}</code>
                </td>
                <td>
                  {p.onboardingState === 'ONBOARDED' ? (
                    <button type="button" onClick={() => setInst({ pkg: p, name: `${p.vnfProductName ?? 'vnf'}-1`, flavourId: 'simple', vimId: vimFor(p)?.id ?? '', params: DEFAULT_PARAMS })}>
                      Instantiate…
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {inst ? (
        <form
          class="card"
          aria-labelledby="inst-form-h"
          onSubmit={(e) => {
            e.preventDefault();
            let additionalParams: Record<string, unknown>;
            try {
              additionalParams = JSON.parse(inst.params || '{}') as Record<string, unknown>;
            } catch (x) {
              setInst({ ...inst, parseError: `additionalParams is not JSON: ${(x as Error).message}` });
              return;
            }
            const vim = vims.find((v) => v.id === inst.vimId);
            const body: Record<string, unknown> = { flavourId: inst.flavourId, additionalParams };
            if (vim) body.vimConnectionInfo = { vim1: { vimId: vim.id, vimType: vim.type === 'kubernetes' ? 'kubernetes' : 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } };
            setConfirm({ body, create: { vnfdId: inst.pkg.vnfdId, vnfInstanceName: inst.name } });
          }}
        >
          <h2 id="inst-form-h">Instantiate {inst.pkg.vnfProductName}</h2>
          <label>
            Instance name
            <input name="name" value={inst.name} required onInput={(e) => setInst({ ...inst, name: (e.target as HTMLInputElement).value })} />
          </label>
          <label>
            Flavour
            <input name="flavourId" value={inst.flavourId} required onInput={(e) => setInst({ ...inst, flavourId: (e.target as HTMLInputElement).value })} />
          </label>
          <label>
            VIM
            <select name="vim" value={inst.vimId} onChange={(e) => setInst({ ...inst, vimId: (e.target as HTMLSelectElement).value })}>
              <option value="">(the default VIM)</option>
              {vims.map((v) => (
                <option key={v.id} value={v.id}>
                  {v.name} ({v.type})
                </option>
              ))}
            </select>
          </label>
          <label>
            additionalParams (JSON)
            <textarea name="additionalParams" rows={6} value={inst.params} onInput={(e) => setInst({ ...inst, params: (e.target as HTMLTextAreaElement).value })} />
          </label>
          {inst.parseError ? (
            <p class="problem" role="alert">
              {inst.parseError}
            </p>
          ) : null}
          <div class="actions">
            <button type="submit" class="primary">
              Review…
            </button>
            <button type="button" onClick={() => setInst(null)}>
              Cancel
            </button>
          </div>
        </form>
      ) : null}
      {confirm && inst ? (
        <ConfirmDialog
          title="Create and instantiate"
          method="POST"
          path="/vnflcm/v2/vnf_instances/{new id}/instantiate"
          body={confirm.body}
          confirmLabel="Create and instantiate"
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            const created = await api<{ id: string }>('/vnflcm/v2/vnf_instances', { method: 'POST', body: confirm.create });
            await api(`/vnflcm/v2/vnf_instances/${created.data.id}/instantiate`, { method: 'POST', body: confirm.body });
            setInst(null);
            navigate(`/instances/${created.data.id}`);
          }}
        >
          <p>
            First <code>POST /vnflcm/v2/vnf_instances</code> with <code>{JSON.stringify(confirm.create)}</code>, then:
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
