/** Instances: one page of the SOL list at a time (server-side paging and filtering), VNFC counts by health. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { listAll, listPage, type Problem, solValue, type VnfInstance } from '../api.ts';
import { healthCounts, type VnfcHealthRow } from '../health.ts';
import { Badge, ColumnHeads, Link, navigate, problemOf, ProblemView, shortId, useFeed } from '../components.tsx';


export function vimOf(i: VnfInstance): string {
  const v = Object.values(i.vimConnectionInfo ?? {});
  if (v.length === 0) return '—';
  return v.map((x) => `${x.vimId ?? '(default)'} (${x.vimType.replace(/^ETSINFV\./, '')})`).join(', ');
}

/** The SOL filter of the search box: a plain word searches names, products and ids; `(op,attr,value)` is used as is. */
export function filterOf(search: string, state: string): string | undefined {
  const parts: string[] = [];
  const s = search.trim();
  if (s.startsWith('(')) parts.push(s);
  else if (s) parts.push(`(cont,vnfInstanceName,${solValue(s)})`);
  if (state) parts.push(`(eq,instantiationState,${state})`);
  return parts.length ? parts.join(';') : undefined;
}

export function InstancesPage(props: { route: string }) {
  const params = new URLSearchParams(props.route.split('?')[1] ?? '');
  const [search, setSearch] = useState(params.get('q') ?? '');
  const [state, setState] = useState(params.get('state') ?? '');
  const [applied, setApplied] = useState({ search: params.get('q') ?? '', state: params.get('state') ?? '' });
  // markers[i] = the marker of page i (page 0 has none)
  const [markers, setMarkers] = useState<(string | undefined)[]>([undefined]);
  const [pageNo, setPageNo] = useState(0);
  const [items, setItems] = useState<VnfInstance[] | null>(null);
  const [next, setNext] = useState<string | undefined>();
  const [err, setErr] = useState<Problem | null>(null);
  // VNFCs of the page's instances the VNFM's health model does not see healthy, by instance
  const [notHealthy, setNotHealthy] = useState<Map<string, VnfcHealthRow[]>>(new Map());
  const seq = useRef(0);

  const loadHealth = async (list: VnfInstance[]) => {
    if (list.length === 0) return setNotHealthy(new Map());
    const rows = await listAll<VnfcHealthRow>('/vnfm/v1/vnfc_health', { filter: `(in,vnfInstanceId,${list.map((i) => solValue(i.id)).join(',')});(neq,condition,healthy)` }, 2000).catch(() => []);
    const by = new Map<string, VnfcHealthRow[]>();
    for (const r of rows) by.set(r.vnfInstanceId, [...(by.get(r.vnfInstanceId) ?? []), r]);
    setNotHealthy(by);
  };

  const load = async (page: number, ms = markers) => {
    const my = ++seq.current;
    try {
      const p = await listPage<VnfInstance>('/vnflcm/v2/vnf_instances', { filter: filterOf(applied.search, applied.state), fields: 'instantiatedVnfInfo,vimConnectionInfo' }, ms[page]);
      if (my !== seq.current) return;
      setItems(p.items);
      setNext(p.next);
      void loadHealth(p.items);
      setErr(null);
      performance.mark(`instances-page-${page}`);
      document.body.dataset.instancesPage = String(page);
    } catch (e) {
      if (my === seq.current) setErr(problemOf(e));
    }
  };
  useEffect(() => {
    setMarkers([undefined]);
    setPageNo(0);
    void load(0, [undefined]);
  }, [applied.search, applied.state]);
  // live: an instance created, deleted or changed by an operation shows up without a reload
  useFeed((e) => {
    if (e.type === 'reset' || e.type === 'VnfIdentifierCreationNotification' || e.type === 'VnfIdentifierDeletionNotification' || (e.data.notificationStatus === 'RESULT' && items?.some((i) => i.id === e.data.vnfInstanceId))) void load(pageNo);
    else if (e.type === 'VnfcHealthChanged' && items?.some((i) => i.id === e.data.vnfInstanceId)) void loadHealth(items);
  }, [pageNo, items, applied]);

  const go = (page: number) => {
    let ms = markers;
    if (page > pageNo && page >= markers.length) ms = [...markers, next];
    setMarkers(ms);
    setPageNo(page);
    void load(page, ms);
  };

  return (
    <section aria-labelledby="instances-h">
      <h1 id="instances-h">VNF instances</h1>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ search, state });
          const q = new URLSearchParams();
          if (search) q.set('q', search);
          if (state) q.set('state', state);
          history.replaceState(null, '', `/ui/instances${q.toString() ? `?${q}` : ''}`);
        }}
      >
        <label>
          Search (name, or a SOL filter such as <code>(eq,vnfProductName,cnf)</code>)
          <input type="search" name="q" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          State
          <select name="state" value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            <option value="INSTANTIATED">INSTANTIATED</option>
            <option value="NOT_INSTANTIATED">NOT_INSTANTIATED</option>
          </select>
        </label>
        <button type="submit">Apply</button>
      </form>
      <ProblemView problem={err} />
      {items === null ? (
        <p aria-busy="true">Loading…</p>
      ) : items.length === 0 ? (
        <p>No instances{applied.search || applied.state ? ' match' : ' yet: onboard a package and instantiate it from the Packages page'}.</p>
      ) : (
        <table data-testid="instances-table">
          <caption class="sr-only">VNF instances, page {pageNo + 1}</caption>
          <ColumnHeads names={['Name', 'State', 'Product', 'VIM', 'VNFCs by health', 'Id']} />
          <tbody>
            {items.map((i) => {
              const bad = notHealthy.get(i.id);
              const c = healthCounts(i, new Set((bad ?? []).map((r) => r.vnfcResourceInfoId)));
              return (
                <tr key={i.id}>
                  <td>
                    <Link to={`/instances/${encodeURIComponent(i.id)}`}>{i.vnfInstanceName || '(no name)'}</Link>
                  </td>
                  <td>
                    <Badge value={i.instantiationState} />
                  </td>
                  <td>
                    {i.vnfProvider} {i.vnfProductName} {i.vnfSoftwareVersion}
                  </td>
                  <td>{vimOf(i)}</td>
                  <td>
                    {c.total === 0 ? (
                      '—'
                    ) : (
                      <span class="counts">
                        <span class="badge ok">{c.healthy} healthy</span>
                        {c.unhealthy ? <span class="badge bad">{c.unhealthy} unhealthy</span> : null}
                        {(['faulty', 'degraded', 'unknown'] as const).map((k) => {
                          const n = bad?.filter((r) => r.condition === k).length ?? 0;
                          return n ? (
                            <span key={k} class={`badge ${k === 'faulty' ? 'bad' : k === 'degraded' ? 'warn' : 'muted'}`} data-health={k} title={bad?.filter((r) => r.condition === k).map((r) => `${r.vnfcInfoId}: ${r.reason ?? ''}`).join('\n')}>
                              {n} {k}
                            </span>
                          ) : null;
                        })}
                        {c.stopped ? <span class="badge warn">{c.stopped} stopped</span> : null}
                      </span>
                    )}
                  </td>
                  <td>
                    <code title={i.id}>{shortId(i.id)}</code>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={pageNo === 0} onClick={() => go(pageNo - 1)}>
          Previous page
        </button>
        <span aria-live="polite">Page {pageNo + 1}</span>
        <button type="button" disabled={!next && pageNo + 1 >= markers.length} onClick={() => go(pageNo + 1)}>
          Next page
        </button>
      </nav>
      <p class="muted">
        Open an instance for its VNFCs and actions. <a href="/ui/operations" onClick={(e) => { e.preventDefault(); navigate('/operations'); }}>Operations</a> shows what runs now.
      </p>
    </section>
  );
}
