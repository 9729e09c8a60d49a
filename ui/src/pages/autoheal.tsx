/** Auto-heal: the fault ledger, heal batches, suppressed batches with their reason and a release button; per-instance storm-guard settings are on the instance page. */
import { useEffect, useState } from 'preact/hooks';
import { api, listPage, type Problem } from '../api.ts';
import { Badge, ColumnHeads, ConfirmDialog, Link, problemOf, ProblemView, shortId, time, useFeed, useInterval } from '../components.tsx';

interface Batch {
  id: string;
  vnfInstanceId: string;
  status: string;
  reason?: string;
  reasonCode?: string;
  targets?: { vnfcInfoId?: string; serverId?: string }[];
  notificationCount: number;
  vnfLcmOpOccId?: string | null;
  createdAt: string;
  released?: boolean;
}
interface Fault {
  id: string;
  vnfInstanceId: string;
  serverId?: string;
  faultType?: string;
  hostId?: string;
  vnfcInstanceId?: string;
  status: string;
  reason?: string;
  batchId?: string;
  receivedAt: string;
}

export function AutohealPage() {
  const [batches, setBatches] = useState<Batch[] | null>(null);
  const [faults, setFaults] = useState<Fault[] | null>(null);
  const [err, setErr] = useState<Problem | null>(null);
  const [release, setRelease] = useState<Batch | null>(null);
  const load = async () => {
    try {
      const [b, f] = await Promise.all([listPage<Batch>('/vnfm/v1/heal_batches', { limit: '100' }), listPage<Fault>('/vnfm/v1/fault_notifications', { limit: '100' })]);
      setBatches(b.items);
      setFaults(f.items);
      setErr(null);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    void load();
  }, []);
  // batches change without LCM events (windows, storm guard): poll, and reload on every op event
  useInterval(() => void load(), 2000);
  useFeed(() => void load());
  const suppressed = (batches ?? []).filter((b) => b.status === 'suppressed' || b.status === 'held');
  return (
    <section aria-labelledby="ah-h">
      <h1 id="ah-h">Auto-heal</h1>
      <p class="muted">Storm-guard settings of an instance (on/off, max unhealthy, heals per VNFC per period) are on its instance page.</p>
      <ProblemView problem={err} />
      <h2>Held back ({suppressed.length})</h2>
      {suppressed.length === 0 ? (
        <p>No suppressed or held batches.</p>
      ) : (
        <ul class="cards" data-testid="suppressed">
          {suppressed.map((b) => (
            <li key={b.id} class="card" data-batch={b.id}>
              <p>
                <Badge value={b.status} /> {b.reasonCode ? <code>{b.reasonCode}</code> : null} — instance <Link to={`/instances/${encodeURIComponent(b.vnfInstanceId)}`}>{shortId(b.vnfInstanceId)}</Link>, {b.targets?.length ?? 0} VNFC(s), {b.notificationCount} notification(s)
              </p>
              <p class="detail">{b.reason ?? 'no reason recorded'}</p>
              <button type="button" class="primary" onClick={() => setRelease(b)}>
                Release batch {shortId(b.id)}…
              </button>
            </li>
          ))}
        </ul>
      )}
      <h2>Heal batches</h2>
      {batches === null ? (
        <p aria-busy="true">Loading…</p>
      ) : batches.length === 0 ? (
        <p>No batches.</p>
      ) : (
        <table data-testid="batches-table">
          <ColumnHeads names={['Created', 'Status', 'Instance', 'VNFCs', 'Notifications', 'Heal', 'Reason']} />
          <tbody>
            {batches.map((b) => (
              <tr key={b.id} data-batch={b.id} data-status={b.status}>
                <td>{time(b.createdAt)}</td>
                <td>
                  <Badge value={b.status} />
                </td>
                <td>
                  <Link to={`/instances/${encodeURIComponent(b.vnfInstanceId)}`}>{shortId(b.vnfInstanceId)}</Link>
                </td>
                <td>{b.targets?.map((t) => shortId(t.vnfcInfoId)).join(', ') || '—'}</td>
                <td>{b.notificationCount}</td>
                <td>{b.vnfLcmOpOccId ? <Link to={`/operations?op=${b.vnfLcmOpOccId}`}>{shortId(b.vnfLcmOpOccId)}</Link> : '—'}</td>
                <td>{b.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Fault ledger</h2>
      {faults === null ? (
        <p aria-busy="true">Loading…</p>
      ) : faults.length === 0 ? (
        <p>No fault notifications.</p>
      ) : (
        <table data-testid="faults-table">
          <ColumnHeads names={['Received', 'Status', 'Fault', 'Server', 'Host', 'VNFC', 'Reason']} />
          <tbody>
            {faults.map((f) => (
              <tr key={f.id}>
                <td>{time(f.receivedAt)}</td>
                <td>
                  <Badge value={f.status} />
                </td>
                <td>{f.faultType ?? '—'}</td>
                <td>
                  <code>{shortId(f.serverId)}</code>
                </td>
                <td>{f.hostId ?? '—'}</td>
                <td>
                  <code>{shortId(f.vnfcInstanceId)}</code>
                </td>
                <td>{f.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {release ? (
        <ConfirmDialog
          title="Release the batch (heal now, skipping the storm guard)"
          method="POST"
          path={`/vnfm/v1/heal_batches/${release.id}/release`}
          confirmLabel="Release"
          onClose={() => setRelease(null)}
          onConfirm={async () => {
            await api(`/vnfm/v1/heal_batches/${release.id}/release`, { method: 'POST' });
            await load();
          }}
        >
          <p>{release.reason}</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
