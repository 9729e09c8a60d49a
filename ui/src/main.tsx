/** The operator dashboard: shell (navigation, login state, live-feed status) and routes. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Problem, session, setUnauthorizedHandler } from './api.ts';
import { Link, ProblemView, problemOf, useRoute } from './components.tsx';
import { feed, type FeedStatus } from './events.ts';
import { AutohealPage } from './pages/autoheal.tsx';
import { InstancePage } from './pages/instance.tsx';
import { InstancesPage } from './pages/instances.tsx';
import { OperationsPage } from './pages/operations.tsx';
import { PackagesPage } from './pages/packages.tsx';
import { SubscriptionsPage } from './pages/subscriptions.tsx';
import { VimsPage } from './pages/vims.tsx';
import './style.css';

interface UiConfig {
  authModes: string[];
  keystone: boolean;
}

const NAV: [string, string][] = [
  ['/instances', 'Instances'],
  ['/operations', 'Operations'],
  ['/autoheal', 'Auto-heal'],
  ['/packages', 'Packages'],
  ['/vims', 'VIMs'],
  ['/subscriptions', 'Subscriptions'],
];

function Login(props: { config: UiConfig; onDone: () => void; reason?: string }) {
  const modes = props.config.authModes;
  const [kind, setKind] = useState<'token' | 'oauth2' | 'keystone'>(modes.includes('oauth2') && !modes.includes('token') ? 'oauth2' : modes.includes('keystone') && !modes.includes('token') ? 'keystone' : 'token');
  const [err, setErr] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const v = (k: string) => String(f.get(k) ?? '').trim();
    setErr(null);
    setBusy(true);
    try {
      if (kind === 'token') {
        session.set(v('token'), v('tokenType') === 'keystone' ? 'keystone' : 'bearer');
      } else if (kind === 'oauth2') {
        const r = await fetch('/token', {
          method: 'POST',
          // client_secret_post, no credentials mode: a Basic challenge on a refusal must not make the browser prompt
          credentials: 'omit',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: v('clientId'), client_secret: v('clientSecret') }).toString(),
        });
        const body = (await r.json().catch(() => ({}))) as { access_token?: string; error?: string; error_description?: string };
        if (!r.ok || !body.access_token) throw new ApiError({ status: r.status, title: body.error ?? 'login refused', detail: body.error_description ?? `the token endpoint answered ${r.status}` });
        session.set(body.access_token, 'bearer');
      } else {
        const r = await api<{ token: string }>('/vnfm/v1/ui/keystone-tokens', { method: 'POST', body: { username: v('username'), password: v('password'), ...(v('project') ? { project: v('project') } : {}) } });
        session.set(r.data.token, 'keystone');
      }
      // the token must open the API
      await api('/vnflcm/v2/vnf_instances?fields=id&filter=(eq,id,none)');
      props.onDone();
    } catch (e2) {
      session.clear();
      setErr(problemOf(e2));
    } finally {
      setBusy(false);
    }
  };
  const tabs: ['token' | 'oauth2' | 'keystone', string, boolean][] = [
    ['token', 'API token', modes.includes('token') || modes.includes('keystone') || modes.includes('oauth2')],
    ['oauth2', 'OAuth 2.0 client', modes.includes('oauth2')],
    ['keystone', 'Keystone user', modes.includes('keystone')],
  ];
  return (
    <main id="main" class="login">
      <h1>Log in to the VNF Manager</h1>
      {props.reason ? <p class="note">{props.reason}</p> : null}
      <p>API authentication is on ({modes.join(', ')}). The token is kept in this tab only (sessionStorage).</p>
      <fieldset class="tabs">
        <legend>Method</legend>
        {tabs
          .filter((t) => t[2])
          .map(([k, label]) => (
            <label key={k}>
              <input type="radio" name="kind" value={k} checked={kind === k} onChange={() => setKind(k)} /> {label}
            </label>
          ))}
      </fieldset>
      <form onSubmit={submit} aria-label="Log in">
        {kind === 'token' ? (
          <>
            <label>
              Token
              <input name="token" type="password" autoComplete="off" required />
            </label>
            <label>
              Kind
              <select name="tokenType">
                <option value="bearer">API or OAuth token (Authorization: Bearer)</option>
                <option value="keystone">Keystone token (X-Auth-Token)</option>
              </select>
            </label>
          </>
        ) : kind === 'oauth2' ? (
          <>
            <label>
              Client id
              <input name="clientId" autoComplete="username" required />
            </label>
            <label>
              Client secret
              <input name="clientSecret" type="password" autoComplete="current-password" required />
            </label>
          </>
        ) : (
          <>
            <label>
              User name
              <input name="username" autoComplete="username" required />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="current-password" required />
            </label>
            <label>
              Project
              <input name="project" />
            </label>
          </>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      <ProblemView problem={err} label="Login failed" />
    </main>
  );
}

function FeedIndicator() {
  const [s, setS] = useState<FeedStatus>(feed.status);
  useEffect(() => feed.onStatus(setS), []);
  return (
    <span class={`feed feed-${s}`} role="status" aria-live="polite" data-testid="feed-status">
      {s === 'live' ? 'live' : s === 'stopped' ? 'offline' : 'reconnecting…'}
    </span>
  );
}

function Page(props: { route: string }) {
  const path = props.route.split('?')[0] as string;
  const m = /^\/instances\/([^/]+)$/.exec(path);
  if (m) return <InstancePage id={decodeURIComponent(m[1] as string)} />;
  if (path.startsWith('/operations')) return <OperationsPage route={props.route} />;
  if (path.startsWith('/autoheal')) return <AutohealPage />;
  if (path.startsWith('/packages')) return <PackagesPage />;
  if (path.startsWith('/vims')) return <VimsPage />;
  if (path.startsWith('/subscriptions')) return <SubscriptionsPage />;
  return <InstancesPage route={props.route} />;
}

function App() {
  const route = useRoute();
  const [config, setConfig] = useState<UiConfig | null>(null);
  const [configErr, setConfigErr] = useState<Problem | null>(null);
  const [authed, setAuthed] = useState(false);
  const [reason, setReason] = useState<string | undefined>();
  useEffect(() => {
    api<UiConfig>('/vnfm/v1/ui/config')
      .then((r) => {
        setConfig(r.data);
        // mtls alone: the browser's client certificate authenticates every call, no token to ask for
        const certOnly = r.data.authModes.length === 1 && r.data.authModes[0] === 'mtls';
        setAuthed(r.data.authModes.includes('none') || certOnly || session.token !== null);
      })
      .catch((e) => setConfigErr(problemOf(e)));
    setUnauthorizedHandler(() => {
      session.clear();
      setReason('The API refused the token (expired or revoked): log in again.');
      setAuthed(false);
    });
  }, []);
  useEffect(() => {
    if (authed) feed.start();
    else feed.stop();
  }, [authed]);
  useEffect(() => {
    const path = route.split('?')[0] as string;
    const name = NAV.find(([p]) => path.startsWith(p))?.[1] ?? (path.startsWith('/instances') ? 'Instance' : 'Instances');
    document.title = `${name} — healvnfm`;
  }, [route]);
  if (configErr) return <main id="main"><ProblemView problem={configErr} label="The VNFM cannot be reached" /></main>;
  if (!config) return <main id="main" aria-busy="true"><p>Loading…</p></main>;
  if (!authed) return <Login config={config} reason={reason} onDone={() => { setReason(undefined); setAuthed(true); }} />;
  const path = route.split('?')[0] as string;
  const noAuth = config.authModes.includes('none') || (config.authModes.length === 1 && config.authModes[0] === 'mtls');
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span class="brand">healvnfm</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([p, label]) => (
              <li key={p}>
                <Link to={p} aria-current={path.startsWith(p) || (p === '/instances' && path === '/') ? 'page' : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <FeedIndicator />
        {noAuth ? (
          <span class="note">{config.authModes.includes('none') ? 'authentication off' : 'client certificate'}</span>
        ) : (
          <button
            type="button"
            onClick={() => {
              session.clear();
              setAuthed(false);
            }}
          >
            Log out
          </button>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
