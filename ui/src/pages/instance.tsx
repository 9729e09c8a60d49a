/** One instance: VNFCs with resources, hosts, addresses and health; cluster nodes; its operations; heal / scale / terminate / storm-guard settings. */
import { useEffect, useState } from 'preact/hooks';
import { api, listAll, type OpOcc, type Problem, solValue, type VnfInstance } from '../api.ts';
import { Badge, ColumnHeads, ConfirmDialog, Fact, Link, problemOf, ProblemView, shortId, time, useFeed } from '../components.tsx';
import { addressesOf, healthOf, hostOf, modelHealth, OPEN_FAULT_STATES, type VnfcHealthRow } from '../health.ts';

interface Fault {
  id: string;
  vnfcInstanceId?: string;
  vnfcResourceInfoId?: string;
  serverId?: string;
  status: string;
  faultType?: string;
  receivedAt?: string;
}

type Action = { title: string; method: string; path: string; body?: unknown; label: string; danger?: boolean; contentType?: string } | null;

const STORM_KEYS = ['isAutohealEnabled', 'autohealMaxUnhealthy', 'autohealMaxHealsPerVnfc', 'autohealFrequencyPeriodSeconds'] as const;

function ClusterNodes(props: { cluster: Record<string, unknown> }) {
  const nodes = (props.cluster.nodes ?? {}) as Record<string, Record<string, unknown>>;
  const entries = Array.isArray(nodes) ? (nodes as Record<string, unknown>[]).map((n, i) => [String(n.name ?? i), n] as const) : Object.entries(nodes);
  const scalars = Object.entries(props.cluster).filter(([, v]) => typeof v !== 'object' || v === null);
  return (
    <section aria-labelledby="cluster-h">
      <h2 id="cluster-h">Kubernetes cluster</h2>
      <dl class="facts">
        {scalars.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{String(v)}</dd>
          </div>
        ))}
      </dl>
      <table data-testid="cluster-nodes">
        <ColumnHeads names={['Node', 'Role', 'VNFC', 'Address', 'etcd member']} />
        <tbody>
          {entries.map(([name, n]) => {
            const etcd = Object.entries(n).find(([k]) => /etcd/i.test(k))?.[1];
            const addr = n.sshAddress ?? n.address ?? n.ip ?? n.nicAddress;
            return (
              <tr key={name}>
                <td>{name}</td>
                <td>
                  <Badge value={String(n.role ?? '—')} />
                </td>
                <td>
                  <code>{shortId(String(n.vnfcInfoId ?? n.vnfcId ?? '—'))}</code>
                </td>
                <td>{addr === undefined ? '—' : String(addr)}</td>
                <td>{etcd === undefined || etcd === null ? '—' : typeof etcd === 'object' ? JSON.stringify(etcd) : String(etcd)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

export function InstancePage(props: { id: string }) {
  const [inst, setInst] = useState<VnfInstance | null>(null);
  const [ops, setOps] = useState<OpOcc[]>([]);
  const [faults, setFaults] = useState<Fault[]>([]);
  const [vnfcHealth, setVnfcHealth] = useState<VnfcHealthRow[]>([]);
  const [err, setErr] = useState<Problem | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [action, setAction] = useState<Action>(null);
  const [scale, setScale] = useState({ aspectId: '', type: 'SCALE_OUT', steps: 1 });
  const [storm, setStorm] = useState<Record<string, string>>({});
  const [note, setNote] = useState('');
  const path = `/vnflcm/v2/vnf_instances/${encodeURIComponent(props.id)}`;

  const load = async () => {
    try {
      const [i, o] = await Promise.all([
        api<VnfInstance>(path),
        listAll<OpOcc>('/vnflcm/v2/vnf_lcm_op_occs', { filter: `(eq,vnfInstanceId,${solValue(props.id)})`, fields: 'error,vnfmProgress' }, 200),
      ]);
      setInst(i.data);
      setOps(o.sort((a, b) => b.startTime.localeCompare(a.startTime)));
      setErr(null);
      const props2 = i.data.vnfConfigurableProperties ?? {};
      setStorm((s) => (Object.keys(s).length ? s : Object.fromEntries(STORM_KEYS.map((k) => [k, props2[k] === undefined ? '' : String(props2[k])]))));
      const aspect = i.data.instantiatedVnfInfo?.scaleStatus?.[0]?.aspectId;
      if (aspect) setScale((s) => (s.aspectId ? s : { ...s, aspectId: aspect }));
      const [f, hv] = await Promise.all([
        listAll<Fault>('/vnfm/v1/fault_notifications', { vnfInstanceId: props.id, limit: '200' }, 200).catch(() => []),
        api<{ vnfcs: VnfcHealthRow[] }>(`/vnfm/v1/vnf_instances/${encodeURIComponent(props.id)}/health`).then((r) => r.data.vnfcs, () => []),
      ]);
      setFaults(f);
      setVnfcHealth(hv);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    void load();
  }, [props.id]);
  useFeed((e) => {
    if (e.data.vnfInstanceId === props.id || e.type === 'reset') void load();
  }, [props.id]);

  if (err && !inst) return <ProblemView problem={err} label="Instance" />;
  if (!inst) return <p aria-busy="true">Loading…</p>;
  const info = inst.instantiatedVnfInfo;
  const resById = new Map((info?.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
  const openFaults = faults.filter((f) => OPEN_FAULT_STATES.has(f.status));
  const faultyVnfc = (vnfcId: string, resId: string) => openFaults.some((f) => f.vnfcInstanceId === vnfcId || f.vnfcResourceInfoId === resId);
  const vnfcs = info?.vnfcInfo ?? [];
  const running = ops.find((o) => !['COMPLETED', 'FAILED', 'ROLLED_BACK'].includes(o.operationState));
  const cluster = info?.metadata?.k8sCluster as Record<string, unknown> | undefined;
  const aspects = [...new Set([...(info?.scaleStatus ?? []).map((s) => s.aspectId), ...(info?.maxScaleLevels ?? []).map((s) => s.aspectId)])];

  const toggle = (id: string) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };

  return (
    <section aria-labelledby="inst-h">
      <p>
        <Link to="/instances">← Instances</Link>
      </p>
      <h1 id="inst-h">{inst.vnfInstanceName || inst.id}</h1>
      <ProblemView problem={err} />
      <dl class="facts">
        <Fact label="Id">
          <code>{inst.id}</code>
        </Fact>
        <Fact label="State">
          <Badge value={inst.instantiationState} /> {info ? <Badge value={info.vnfState} /> : null}
        </Fact>
        <Fact label="Product">
          {inst.vnfProvider} {inst.vnfProductName} {inst.vnfSoftwareVersion} (VNFD {inst.vnfdVersion})
        </Fact>
        <Fact label="Flavour">{info?.flavourId ?? '—'}</Fact>
        <Fact label="Scale">{(info?.scaleStatus ?? []).map((s) => `${s.aspectId}: ${s.scaleLevel}`).join(', ') || '—'}</Fact>
        <Fact label="Running operation">{running ? <Link to={`/operations?op=${running.id}`}>{`${running.operation} ${running.operationState}`}</Link> : 'none'}</Fact>
      </dl>

      {inst.instantiationState === 'INSTANTIATED' ? (
        <div class="actions" role="group" aria-label="Actions">
          <button
            type="button"
            disabled={selected.size === 0}
            onClick={() => setAction({ title: `Heal ${selected.size} VNFC(s)`, method: 'POST', path: `${path}/heal`, body: { vnfcInstanceId: [...selected], cause: 'operator: heal from the dashboard' }, label: 'Heal' })}
          >
            Heal selected VNFCs ({selected.size})
          </button>
          <button type="button" disabled={vnfcs.length === 0} onClick={() => setAction({ title: 'Heal every VNFC', method: 'POST', path: `${path}/heal`, body: { vnfcInstanceId: vnfcs.map((c) => c.id), cause: 'operator: heal all from the dashboard' }, label: 'Heal all' })}>
            Heal all VNFCs
          </button>
          <button type="button" class="danger" onClick={() => setAction({ title: 'Terminate the VNF', method: 'POST', path: `${path}/terminate`, body: { terminationType: 'FORCEFUL' }, label: 'Terminate', danger: true })}>
            Terminate…
          </button>
        </div>
      ) : (
        <div class="actions" role="group" aria-label="Actions">
          <button type="button" class="danger" onClick={() => setAction({ title: 'Delete the VNF instance resource', method: 'DELETE', path, label: 'Delete', danger: true })}>
            Delete instance…
          </button>
        </div>
      )}

      <h2>VNFCs</h2>
      {vnfcs.length === 0 ? (
        <p>No VNFCs.</p>
      ) : (
        <table data-testid="vnfc-table">
          <ColumnHeads names={['Select', 'VNFC', 'VDU', 'Health', 'Resource id', 'Host / node', 'CP addresses']} />
          <tbody>
            {vnfcs.map((c) => {
              const r = resById.get(c.vnfcResourceInfoId);
              // the VNFM's health model when it has a row for the VNFC, else what the instance says
              const m = modelHealth(vnfcHealth.find((x) => x.vnfcResourceInfoId === c.vnfcResourceInfoId));
              const h = faultyVnfc(c.id, c.vnfcResourceInfoId) && m?.value !== 'faulty' ? 'faulty' : (m?.value ?? healthOf(c, r, false));
              return (
                <tr key={c.id} data-vnfc={c.id}>
                  <td>
                    <input type="checkbox" aria-label={`select VNFC ${c.id}`} checked={selected.has(c.id)} onChange={() => toggle(c.id)} />
                  </td>
                  <td>
                    <code title={c.id}>{c.id}</code>
                  </td>
                  <td>{c.vduId}</td>
                  <td title={m?.title} data-health={h}>
                    <Badge value={h} />
                    {m && m.value !== 'healthy' ? <span class="muted"> {m.title.split(' · ')[0]}</span> : null}
                  </td>
                  <td>
                    <code>{r?.computeResource.resourceId ?? '—'}</code>
                  </td>
                  <td>{hostOf(r)}</td>
                  <td>{addressesOf(r).join(', ') || '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}

      {cluster ? <ClusterNodes cluster={cluster} /> : null}

      {inst.instantiationState === 'INSTANTIATED' && aspects.length > 0 ? (
        <form
          class="toolbar"
          aria-labelledby="scale-h"
          onSubmit={(e) => {
            e.preventDefault();
            setAction({ title: 'Scale the VNF', method: 'POST', path: `${path}/scale`, body: { type: scale.type, aspectId: scale.aspectId, numberOfSteps: scale.steps }, label: 'Scale' });
          }}
        >
          <h2 id="scale-h">Scale</h2>
          <label>
            Aspect
            <select value={scale.aspectId} onChange={(e) => setScale({ ...scale, aspectId: (e.target as HTMLSelectElement).value })}>
              {aspects.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          </label>
          <label>
            Direction
            <select value={scale.type} onChange={(e) => setScale({ ...scale, type: (e.target as HTMLSelectElement).value })}>
              <option value="SCALE_OUT">out</option>
              <option value="SCALE_IN">in</option>
            </select>
          </label>
          <label>
            Steps
            <input type="number" min={1} value={scale.steps} onInput={(e) => setScale({ ...scale, steps: Math.max(1, Number((e.target as HTMLInputElement).value) || 1) })} />
          </label>
          <button type="submit">Scale…</button>
        </form>
      ) : null}

      <form
        class="toolbar"
        aria-labelledby="storm-h"
        onSubmit={(e) => {
          e.preventDefault();
          const body: Record<string, unknown> = {};
          for (const k of STORM_KEYS) {
            const v = (storm[k] ?? '').trim();
            if (v === '') body[k] = null;
            else if (k === 'isAutohealEnabled') body[k] = v === 'true';
            else if (k === 'autohealMaxUnhealthy') body[k] = /%$/.test(v) ? v : Number(v);
            else body[k] = Number(v);
          }
          setAction({ title: 'Change the auto-heal settings', method: 'PATCH', path, body: { vnfConfigurableProperties: body }, label: 'Save', contentType: 'application/merge-patch+json' });
        }}
      >
        <h2 id="storm-h">Auto-heal and storm guard</h2>
        <label>
          Auto-heal
          <select value={storm.isAutohealEnabled ?? ''} onChange={(e) => setStorm({ ...storm, isAutohealEnabled: (e.target as HTMLSelectElement).value })}>
            <option value="">not set</option>
            <option value="true">on</option>
            <option value="false">off</option>
          </select>
        </label>
        <label>
          Max unhealthy (count or %)
          <input value={storm.autohealMaxUnhealthy ?? ''} onInput={(e) => setStorm({ ...storm, autohealMaxUnhealthy: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Max heals per VNFC
          <input inputMode="numeric" value={storm.autohealMaxHealsPerVnfc ?? ''} onInput={(e) => setStorm({ ...storm, autohealMaxHealsPerVnfc: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Period (s)
          <input inputMode="numeric" value={storm.autohealFrequencyPeriodSeconds ?? ''} onInput={(e) => setStorm({ ...storm, autohealFrequencyPeriodSeconds: (e.target as HTMLInputElement).value })} />
        </label>
        <button type="submit">Save…</button>
      </form>
      {note ? <p role="status">{note}</p> : null}

      <h2>Operations</h2>
      {ops.length === 0 ? (
        <p>No operations.</p>
      ) : (
        <table data-testid="instance-ops">
          <ColumnHeads names={['Operation', 'State', 'Automatic', 'Started', 'Id']} />
          <tbody>
            {ops.map((o) => (
              <tr key={o.id} data-op={o.id} data-state={o.operationState}>
                <td>{o.operation}</td>
                <td>
                  <Badge value={o.operationState} />
                </td>
                <td>{o.isAutomaticInvocation ? 'auto-heal' : 'no'}</td>
                <td>{time(o.startTime)}</td>
                <td>
                  <Link to={`/operations?op=${o.id}`}>{shortId(o.id)}</Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {openFaults.length > 0 ? (
        <p>
          {openFaults.length} open fault notification(s): see <Link to="/autoheal">Auto-heal</Link>.
        </p>
      ) : null}

      {action ? (
        <ConfirmDialog
          title={action.title}
          method={action.method}
          path={action.path}
          body={action.body}
          confirmLabel={action.label}
          danger={action.danger}
          onClose={() => setAction(null)}
          onConfirm={async () => {
            const r = await api(action.path, { method: action.method, body: action.body, ...(action.contentType ? { contentType: action.contentType } : {}) });
            const loc = r.headers.get('location');
            setNote(loc ? `Accepted: operation ${loc.split('/').pop()}` : `${action.title}: done`);
            setSelected(new Set());
            if (action.method === 'DELETE') history.back();
            else void load();
          }}
        />
      ) : null}
    </section>
  );
}
